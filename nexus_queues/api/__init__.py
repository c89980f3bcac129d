"""The HTTP API (``pip install nexus-queues[api]``), built with django-ninja.

Mount it with ``path("nexus/", include("nexus_queues.urls"))``.
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI
from ninja.errors import ValidationError, ValidationErrorContext

from ..jobs.control import all_jobs
from ..registry import registry
from . import errors
from .auth import AUTH
from .batches import router as batches_router
from .bodies import JsonParser
from .jobs import router as jobs_router
from .messages import router as messages_router
from .queues import router as queues_router


class QueuesAPI(NinjaAPI):
    """ninja's API whose OpenAPI description also holds every queue's message schema, and the queue and job names."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        """ninja's description plus the queue and job names and the queues' message schemas (the body of
        ``POST /queues/{name}``)."""
        schema = super().get_openapi_schema(*args, **kwargs)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        bodies = [_message_schema(cls, components) for cls in registry]
        names = {"queues": [cls.queue_name() for cls in registry], "jobs": [job.name() for job in all_jobs()]}
        for operation in (op for path in schema["paths"].values() for op in path.values()):
            known = names["jobs" if operation.get("tags") == ["jobs"] else "queues"]
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] == "name" and known:
                    parameter["schema"]["enum"] = known
            if operation.get("operationId") == "enqueue" and bodies:
                one_or_many = [{"oneOf": [body, {"type": "array", "items": body}]} for body in bodies]
                operation["requestBody"]["content"]["application/json"]["schema"] = {"anyOf": one_or_many}
        return schema

    def validation_error_from_error_contexts(self, error_contexts: list[ValidationErrorContext]) -> ValidationError:
        """ninja's 422, locating errors by the request's own fields: ``["body", "status"]``, not ``["body", "change",
        "status"]`` (ninja puts the view's parameter name in when the whole body is one parameter)."""
        error = super().validation_error_from_error_contexts(error_contexts)
        whole_bodies = {_whole_body_parameter(context.model) for context in error_contexts} - {None}
        for item in error.errors:
            loc = tuple(item["loc"])
            if loc[:1] == ("body",) and len(loc) > 1 and loc[1] in whole_bodies:
                item["loc"] = ("body", *loc[2:])
        return error


def _whole_body_parameter(model: Any) -> str | None:
    """The name of the one parameter that is the whole body, or None."""
    fields = list(model.model_fields)
    return fields[0] if model.__ninja_param_source__ == "body" and len(fields) == 1 else None


def _message_schema(message_class: Any, components: dict[str, Any]) -> dict[str, str]:
    name = f"queue.{message_class.queue_name()}"
    body = message_class.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(body.pop("$defs", {}))
    components[name] = body
    return {"$ref": f"#/components/schemas/{name}"}


api = QueuesAPI(
    title="nexus_queues", version="1", urls_namespace="nexus_queues", auth=AUTH, parser=JsonParser(),
    description="Enqueue, inspect and steer the messages of SQL-table queues, and the jobs that process them.",
)
errors.install(api)
api.add_router("", queues_router)
api.add_router("", messages_router)
api.add_router("", jobs_router)
api.add_router("", batches_router)
