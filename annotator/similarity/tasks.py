from celery import shared_task
from django.conf import settings


@shared_task(
    acks_late=True,
    time_limit=settings.DUPLICATE_PASS_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.DUPLICATE_PASS_TIME_LIMIT_SECONDS - 30,
)
def run_duplicate_pass_task(pass_id: int) -> None:
    from .services import run_duplicate_pass

    run_duplicate_pass(pass_id=pass_id)
