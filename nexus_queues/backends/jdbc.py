"""How a JVM client (Spark's JDBC reader and writer) reaches each engine: its driver, URL and connection properties,
from Django's settings of the alias.

SQLite has none: it takes one writer at a time, so Spark's parallel JDBC tasks would only queue for its lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Jdbc:
    """A database as Spark's JDBC source and sink take it: ``spark.read.jdbc(jdbc.url, table, properties=...)``."""

    url: str
    properties: dict[str, str] = field(default_factory=dict)
    """The connection's properties, the driver's class (``driver``), user and password among them."""

    @property
    def driver(self) -> str:
        """The JDBC driver's class."""
        return self.properties["driver"]

    def options(self, **more: Any) -> dict[str, str]:
        """The options of ``spark.read.format("jdbc")`` / ``df.write.format("jdbc")``: url, properties and ``more``."""
        return {"url": self.url, **self.properties, **{key: str(value) for key, value in more.items()}}


class JdbcDriver:
    """An engine's JDBC driver: what it is called, where to get it, and how it reaches a database."""

    driver: ClassVar[str]
    """The driver's class, as Spark loads it."""
    maven: ClassVar[str]
    """Its Maven coordinates, for ``spark.jars.packages``."""
    debian: ClassVar[str]
    """Debian's package of it."""
    jar: ClassVar[str]
    """Where Debian's package puts the jar, for ``spark.jars``."""
    scheme: ClassVar[str]
    default_port: ClassVar[int]
    properties: ClassVar[dict[str, str]]
    """Properties of every connection: batched inserts rewritten into multi-row statements, and the engine's own."""

    @classmethod
    def connect(cls, settings_dict: Mapping[str, Any], *, time_zone: str, pooled: bool = False) -> Jdbc:
        """How to reach the database of a Django alias's ``settings_dict`` (HOST, PORT, NAME, USER, PASSWORD,
        OPTIONS); ``time_zone`` is the one Django stores times in, ``pooled`` says a transaction pooler is between."""
        host = settings_dict.get("HOST") or "localhost"
        if ":" in host:
            host = f"[{host}]"  # an IPv6 address
        port = settings_dict.get("PORT") or cls.default_port
        properties = {"driver": cls.driver, **cls.properties}
        if settings_dict.get("USER"):
            properties["user"] = str(settings_dict["USER"])
        if settings_dict.get("PASSWORD"):
            properties["password"] = str(settings_dict["PASSWORD"])
        options = settings_dict.get("OPTIONS") or {}
        properties |= cls.own_properties(options, time_zone=time_zone, pooled=pooled)
        return Jdbc(f"jdbc:{cls.scheme}://{host}:{port}/{settings_dict['NAME']}", properties)

    @classmethod
    def own_properties(cls, options: Mapping[str, Any], *, time_zone: str, pooled: bool) -> dict[str, str]:
        """The engine's properties from the alias's OPTIONS, its time zone and its pooler."""
        return {}

    @classmethod
    def socket(cls, settings_dict: Mapping[str, Any]) -> str | None:
        """The Unix socket the alias connects through (which a JDBC driver cannot use), or None."""
        host = str(settings_dict.get("HOST") or "")
        return host if host.startswith("/") else None


class PostgresJdbc(JdbcDriver):
    """PgJDBC, ``org.postgresql:postgresql``."""

    driver = "org.postgresql.Driver"
    maven = "org.postgresql:postgresql:42.7.4"
    debian = "libpostgresql-jdbc-java"
    jar = "/usr/share/java/postgresql.jar"
    scheme = "postgresql"
    default_port = 5432
    # stringtype=unspecified: a string parameter is typed by its column, so text goes into jsonb and timestamptz.
    properties = {"reWriteBatchedInserts": "true", "stringtype": "unspecified"}
    LIBPQ = {
        "sslmode": "sslmode", "sslrootcert": "sslrootcert", "sslcert": "sslcert", "sslkey": "sslkey",
        "sslpassword": "sslpassword", "connect_timeout": "connectTimeout", "application_name": "ApplicationName",
        "options": "options",
    }
    """libpq's connection parameters (Django's OPTIONS) that PgJDBC has, by PgJDBC's name; the others are not
    carried (Django's own, as ``isolation_level``, mean nothing to it)."""

    @classmethod
    def own_properties(cls, options: Mapping[str, Any], *, time_zone: str, pooled: bool) -> dict[str, str]:
        found = {cls.LIBPQ[key]: str(value) for key, value in options.items() if key in cls.LIBPQ}
        if pooled:
            # A transaction pooler lends each transaction another server session: a statement prepared in one
            # would be missing from the next (PgJDBC prepares a statement run five times).
            found["prepareThreshold"] = "0"
        return found


class MariaDBJdbc(JdbcDriver):
    """MariaDB Connector/J 2.7, ``org.mariadb.jdbc:mariadb-java-client``, for MariaDB and MySQL.

    Its URL says ``jdbc:mysql:``, which the 2.x driver takes as its own: Spark picks its SQL dialect by the URL, and
    only ``jdbc:mysql:`` gets the MySQL one (identifiers in backquotes); with ``jdbc:mariadb:`` Spark would quote
    them in double quotes, which MariaDB reads as strings (``WHERE "id" >= 1`` matches nothing).
    """

    driver = "org.mariadb.jdbc.Driver"
    maven = "org.mariadb.jdbc:mariadb-java-client:2.7.12"
    debian = "libmariadb-java"
    jar = "/usr/share/java/mariadb-java-client.jar"
    scheme = "mysql"
    default_port = 3306
    properties = {"rewriteBatchedStatements": "true", "useLegacyDatetimeCode": "false"}
    """The driver speaks utf8mb4 itself where the server has it; its times are read and written in the
    ``serverTimezone`` below rather than the JVM's."""

    @classmethod
    def own_properties(cls, options: Mapping[str, Any], *, time_zone: str, pooled: bool) -> dict[str, str]:
        # Django stores a DATETIME in the connection's time zone (UTC under USE_TZ): the driver must read it so.
        found = {"serverTimezone": time_zone}
        if options.get("connect_timeout"):
            found["connectTimeout"] = str(int(float(options["connect_timeout"]) * 1000))  # seconds, milliseconds
        ssl = options.get("ssl") or {}
        if ssl:
            found["useSsl"] = "true"
            if ssl.get("ca"):
                found["serverSslCert"] = str(ssl["ca"])
        return found

    @classmethod
    def socket(cls, settings_dict: Mapping[str, Any]) -> str | None:
        return (settings_dict.get("OPTIONS") or {}).get("unix_socket") or super().socket(settings_dict)
