"""The API's JSON parser: bodies nested deeper than settings.API_MAX_DEPTH are a 400 naming the
limit and the byte, refused before json.load builds anything (annotator/json_depth.py).
REST_FRAMEWORK's DEFAULT_PARSER_CLASSES puts it in JSONParser's place."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotator.json_depth import TooDeep, check_depth


class DepthLimitedJSONParser(JSONParser):
    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        body = stream.read()  # whole, as json.load would read it
        try:
            check_depth(body, settings.API_MAX_DEPTH)
        except TooDeep as error:
            raise ParseError(
                f"JSON parse error - nested deeper than the limit of {error.limit} levels "
                f"at byte {error.offset}"
            ) from None
        return super().parse(io.BytesIO(body), media_type, parser_context)
