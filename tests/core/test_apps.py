"""The app's start-up: what loading ``nexus_queues`` sets up for the project."""


def test_app__mysql_extra_works_as_installed(run_django):
    """With PyMySQL (the ``mysql`` extra) and no mysqlclient, Django's MySQL backend loads after setup."""
    done = run_django("from django.db.backends.mysql import base\nimport pymysql\nassert base.Database is pymysql\n")
    assert done.returncode == 0, done.stderr
