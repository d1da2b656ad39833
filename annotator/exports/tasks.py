from celery import shared_task


@shared_task(acks_late=True, time_limit=3600, soft_time_limit=3540)
def export_dataset_task(job_id: int) -> None:
    from .services import run_export_job

    run_export_job(job_id=job_id)
