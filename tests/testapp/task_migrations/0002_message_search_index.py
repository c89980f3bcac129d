from django.db import migrations

from nexus_queues.operations import AddMessageSearchIndex


class Migration(migrations.Migration):

    dependencies = [
        ('nexus_tasks', '0001_initial'),
    ]

    operations = [
        AddMessageSearchIndex('DefaultTasksQueueItem'),
        AddMessageSearchIndex('ReportsTasksQueueItem'),
    ]
