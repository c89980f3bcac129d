"""URLs of the demo site."""

from django.contrib import admin
from django.urls import include, path

from nexus_queues.contrib.health_checks import QueueHealthCheckView

# The site's own checks; QueueHealthCheckView adds one per queue after them.
HEALTH_CHECKS = ["health_check.checks.Database", "health_check.checks.Cache", "health_check.checks.Storage"]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("nexus/", include("nexus_queues.urls")),
    path("health/", QueueHealthCheckView.as_view(checks=HEALTH_CHECKS), name="health"),
]
