from django.db import migrations, models

from nexus_queues.operations import AddIndexWithoutBlocking


class Migration(migrations.Migration):
    # PostgreSQL builds the index CONCURRENTLY, which no transaction may hold: the workers go on writing runs.
    atomic = False

    dependencies = [
        ("nexus_queues", "0012_batches"),
    ]

    operations = [
        AddIndexWithoutBlocking(
            model_name="jobrun",
            index=models.Index(fields=["started_at", "id"], name="nx_jobrun_started"),
        ),
    ]
