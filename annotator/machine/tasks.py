from celery import shared_task
from django.conf import settings


@shared_task(
    acks_late=True,
    time_limit=settings.MACHINE_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.MACHINE_TIME_LIMIT_SECONDS - 30,
)
def run_machine_task(run_id: int) -> None:
    from .services import run_machine_run

    run_machine_run(run_id=run_id)
