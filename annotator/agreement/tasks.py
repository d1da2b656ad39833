from celery import shared_task
from django.conf import settings


@shared_task(
    acks_late=True,
    time_limit=settings.AGREEMENT_TIME_LIMIT_SECONDS,
    soft_time_limit=settings.AGREEMENT_TIME_LIMIT_SECONDS - 30,
)
def run_agreement_task(run_id: int) -> None:
    from .services import run_agreement_run

    run_agreement_run(run_id=run_id)


@shared_task(time_limit=300, soft_time_limit=270)
def agreement_sweep_task() -> None:
    """Celery beat: start runs for rounds that completed without one (a missed hook, a race
    between the last two submits), and mark failed the runs a dead worker left behind."""
    from .services import fail_lost_runs, start_runs_for_completed_rounds

    fail_lost_runs()
    start_runs_for_completed_rounds()
