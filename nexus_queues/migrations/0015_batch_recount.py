import django.utils.timezone
from django.db import migrations, models

COUNTERS = ("processed", "error", "cancelled")


def no_negative_counts(apps, schema_editor):
    """A counter below none (a change went uncounted, before every ORM writer counted) starts again from none: the
    recount then sets it from the batch's rows."""
    batches = apps.get_model("nexus_queues", "Batch").objects.using(schema_editor.connection.alias)
    for name in COUNTERS:
        batches.filter(**{f"{name}__lt": 0}).update(**{name: 0})


class Migration(migrations.Migration):

    dependencies = [
        ("nexus_queues", "0014_job_runs_without_prefix_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="counted_at",
            field=models.DateTimeField(
                default=django.utils.timezone.now,
                help_text="When its counters last changed, or were recounted from its rows",
            ),
            preserve_default=False,
        ),
        migrations.RunPython(no_negative_counts, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="batch",
            name="processed",
            field=models.PositiveBigIntegerField(
                default=0, help_text="Its messages now Processed (or deleted as processed)"
            ),
        ),
        migrations.AlterField(
            model_name="batch",
            name="error",
            field=models.PositiveBigIntegerField(default=0, help_text="Its messages now Error"),
        ),
        migrations.AlterField(
            model_name="batch",
            name="cancelled",
            field=models.PositiveBigIntegerField(default=0, help_text="Its messages now Cancelled"),
        ),
    ]
