from celery import shared_task
from django.conf import settings


@shared_task(
    acks_late=True,
    time_limit=settings.SCREENING_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.SCREENING_TIME_LIMIT_SECONDS - 30,
)
def retrain_task(job_id: int) -> None:
    from .retrain import run_retrain

    run_retrain(job_id=job_id)
