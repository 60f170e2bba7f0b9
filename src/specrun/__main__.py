from specrun.cli import entry

entry()
