from celery import shared_task


@shared_task(time_limit=300, soft_time_limit=270)
def release_stale_assignments_task() -> None:
    """Celery beat: return assignments left untouched past the timeout to the pool."""
    from .services import release_stale_assignments

    release_stale_assignments()
