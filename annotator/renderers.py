from django.forms.renderers import TemplatesSetting


class FormRenderer(TemplatesSetting):
    """Renders `{{ form }}` with templates/includes/form.html on every page."""

    form_template_name = "includes/form.html"
