from celery import shared_task


@shared_task(acks_late=True, time_limit=4 * 3600, soft_time_limit=4 * 3600 - 60)
def backup_job_task(job_id: int) -> None:
    """Run BackupJob `job_id`, a dump or a restore."""
    from .services import run_backup_job

    run_backup_job(job_id=job_id)
