from celery import shared_task


@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3540)
def import_issues_task(job_id: int) -> None:
    from .services import run_import_job

    run_import_job(job_id=job_id)


# Waits for GitHub's rate limit happen inside the task, so its limit is the job's own.
@shared_task(acks_late=True, time_limit=4 * 3600, soft_time_limit=4 * 3600 - 60)
def sync_github_task(job_id: int) -> None:
    from .sync import run_sync_job

    run_sync_job(job_id=job_id)


@shared_task(time_limit=300, soft_time_limit=270)
def resync_github_task() -> None:
    """Celery beat: queue a sync of every repository marked for periodic re-sync."""
    from .sync import resync_periodic_repositories

    resync_periodic_repositories()


@shared_task(time_limit=1800, soft_time_limit=1740)
def index_search_task() -> None:
    """Celery beat: index any issue a stopped job left unsearchable."""
    from .search import index_pending_issues

    index_pending_issues()
