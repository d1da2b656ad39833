"""REST API for one's own API tokens: list, create (the secret is in that response only),
revoke. Other users' tokens are 404.

Creating needs a logged-in session (the docs page, or a browser-authenticated client): a
token cannot mint more tokens, so revoking a leaked token cuts off everything it could reach.
Listing and revoking work with a token too; a script may revoke the token it is using.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .errors import TokenError
from .models import ApiToken
from .services import MAX_DAYS, NAME_LENGTH, create_api_token, revoke_own_api_token


class TokenOutput(serializers.ModelSerializer):
    state = serializers.ChoiceField(choices=ApiToken.State.choices, read_only=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked_at",
            "state",
        ]
        read_only_fields = fields


class CreatedTokenOutput(TokenOutput):
    secret = serializers.CharField(help_text="the token; shown in this response only")

    class Meta(TokenOutput.Meta):
        fields = [*TokenOutput.Meta.fields, "secret"]
        read_only_fields = fields


class TokenInput(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_LENGTH)
    days = serializers.IntegerField(
        min_value=1,
        max_value=MAX_DAYS,
        required=False,
        allow_null=True,
        default=None,
        help_text="expire after this many days; omit or null for never",
    )


class TokenListApi(generics.ListAPIView):
    serializer_class = TokenOutput

    def get_queryset(self) -> Any:
        return ApiToken.objects.owned_by(self.request.user)

    @extend_schema(
        request=TokenInput,
        responses={201: CreatedTokenOutput},
        description="Create a token (session authentication only). The secret is returned "
        "once, in this response; only its hash is stored.",
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.auth, ApiToken):
            raise PermissionDenied(
                "A token cannot create tokens: log in and use /account/tokens/, or run "
                "`manage.py create_api_token`."
            )
        data = TokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            token, secret = create_api_token(user=request.user, **data.validated_data)
        except TokenError as error:
            raise ValidationError({"detail": str(error)}) from error
        created = {**TokenOutput(token).data, "secret": secret}  # CreatedTokenOutput's shape
        response = Response(created, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response


class TokenApi(APIView):
    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        """Revoke one of your tokens (again: still 204, the first date kept)."""
        try:
            revoke_own_api_token(user=request.user, token_id=pk)
        except ApiToken.DoesNotExist:
            raise Http404("No such token") from None
        return Response(status=status.HTTP_204_NO_CONTENT)
