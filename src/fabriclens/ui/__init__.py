"""`fabriclens ui`: a local web dashboard over the CLI's JSON documents.

The web layer runs the same commands as the CLI (in-process, through the entry point that the
``ui`` command hands down) and renders their ``--json`` documents; ``/api/<command>`` returns
exactly what ``fabriclens <command> ... --json`` prints. Starlette, uvicorn, Jinja2 and plotly
are imported only here (the ``ui`` extra), never by the other commands."""
