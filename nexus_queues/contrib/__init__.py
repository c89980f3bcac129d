"""Integrations with other libraries, each behind its own extra and imported only when used."""
