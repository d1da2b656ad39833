from django.contrib import admin

from .models import ImportJob, Issue, IssueComment, Repository, RepositoryAlias


class RepositoryAliasInline(admin.TabularInline):
    model = RepositoryAlias
    extra = 0


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = ["full_name", "created_at"]
    search_fields = ["owner", "name", "aliases__owner", "aliases__name"]
    inlines = [RepositoryAliasInline]


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    list_display = ["__str__", "title", "state", "is_pull_request", "created_at"]
    list_filter = ["repository", "state", "is_pull_request"]
    search_fields = ["title"]
    list_select_related = ["repository"]
    readonly_fields = ["content_hash", "imported_at"]
    exclude = ["search_vector"]


@admin.register(IssueComment)
class IssueCommentAdmin(admin.ModelAdmin):
    list_display = ["issue", "author", "created_at"]
    list_select_related = ["issue__repository"]
    raw_id_fields = ["issue"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "original_name", "status", "created", "updated", "unchanged", "skipped"]
    list_filter = ["status"]
    readonly_fields = [f.name for f in ImportJob._meta.fields]


# --- GitHub sync ----------------------------------------------------------------------------
from .models import SyncJob, SyncState  # noqa: E402


@admin.register(SyncState)
class SyncStateAdmin(admin.ModelAdmin):
    list_display = ["repository", "since", "phase", "periodic", "last_synced_at"]
    list_editable = ["periodic"]
    list_select_related = ["repository"]
    readonly_fields = ["repository", "etags", "next_url", "run_since", "run_started_at"]

    def has_add_permission(self, request: object) -> bool:
        # The repository is read-only, so an "add" would save a row without one and fail in
        # the database (a 500). A sync creates its state (sync.py).
        return False


@admin.register(SyncJob)
class SyncJobAdmin(admin.ModelAdmin):
    list_display = ["pk", "repository_name", "status", "pages", "waits", "created_at"]
    list_filter = ["status"]
    readonly_fields = [f.name for f in SyncJob._meta.fields]
