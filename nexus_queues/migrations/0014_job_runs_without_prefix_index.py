from django.db import migrations

from nexus_queues.operations import DropPatternIndex


class Migration(migrations.Migration):
    # PostgreSQL drops the index CONCURRENTLY, which no transaction may hold: the workers go on writing runs.
    atomic = False

    dependencies = [
        ("nexus_queues", "0013_job_runs_by_start"),
    ]

    operations = [
        # Runs are looked up by their whole correlation id (the unique index), never by a prefix of it.
        DropPatternIndex(model_name="jobrun", field_name="correlation_id"),
    ]
