"""The HTTP API (``pip install nexus-queues[api]``), built with django-ninja.

Mount it with ``path("nexus/", include("nexus_queues.urls"))``.
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI

from ..registry import registry
from . import errors
from .auth import AUTH
from .bodies import JsonParser
from .messages import router as messages_router
from .queues import router as queues_router


class QueuesAPI(NinjaAPI):
    """ninja's API whose OpenAPI description also holds every queue's message schema."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        """ninja's description plus the queue names and their message schemas (the body of ``POST /queues/{name}``)."""
        schema = super().get_openapi_schema(*args, **kwargs)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        bodies = [_message_schema(cls, components) for cls in registry]
        names = [cls.queue_name() for cls in registry]
        for operation in (op for path in schema["paths"].values() for op in path.values()):
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] == "name" and names:
                    parameter["schema"]["enum"] = names
            if operation.get("operationId") == "enqueue" and bodies:
                one_or_many = [{"oneOf": [body, {"type": "array", "items": body}]} for body in bodies]
                operation["requestBody"]["content"]["application/json"]["schema"] = {"anyOf": one_or_many}
        return schema


def _message_schema(message_class: Any, components: dict[str, Any]) -> dict[str, str]:
    name = f"queue.{message_class.queue_name()}"
    body = message_class.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(body.pop("$defs", {}))
    components[name] = body
    return {"$ref": f"#/components/schemas/{name}"}


api = QueuesAPI(
    title="nexus_queues", version="1", urls_namespace="nexus_queues", auth=AUTH, parser=JsonParser(),
    description="Enqueue, inspect and steer the messages of SQL-table queues.",
)
errors.install(api)
api.add_router("", queues_router)
api.add_router("", messages_router)
