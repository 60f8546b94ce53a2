"""``attentive-reader serve``: a local web page to ask a reader about a document.

``app.create_app(reader, data=...)`` builds the Starlette app (server-side HTML from the
Jinja templates in ``templates/``, every text escaped, no JavaScript); the command runs it
with uvicorn on ``127.0.0.1`` unless told otherwise.
"""
