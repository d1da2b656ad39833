"""factory_boy factories for every model the tests create."""

from functools import cache

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import get_hasher, make_password

from annotator.issues.models import Issue, IssueComment, Repository

PASSWORD = "correct horse battery staple"


def hashed_password() -> str:
    """PASSWORD hashed by the first hasher of the current settings, once per hasher and test
    process (PBKDF2 costs about 0.4 s of CPU a hash): every user of the suite shares it. A
    module that switches to a fast hasher gets users it can log in; servers started by the
    tests, with the production hashers, verify the PBKDF2 one."""
    return _hashed(get_hasher().algorithm)


@cache
def _hashed(algorithm: str) -> str:
    return make_password(PASSWORD, hasher=algorithm)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"researcher{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.LazyFunction(hashed_password)


class RepositoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Repository

    owner = "hpcaitech"
    name = factory.Sequence(lambda n: f"Repo{n}")


class IssueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Issue

    repository = factory.SubFactory(RepositoryFactory)
    number = factory.Sequence(lambda n: n + 1)
    title = factory.Sequence(lambda n: f"Issue {n}")
    body = "Something broke."
    state = "open"
    content_hash = factory.Sequence(lambda n: f"{n:064x}")


class IssueCommentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IssueComment

    issue = factory.SubFactory(IssueFactory)
    key = factory.Sequence(lambda n: f"id:{n}")
    author = "reviewer"
    body = "Have you tried a newer NCCL?"
    content_hash = factory.Sequence(lambda n: f"{n:064x}")
