"""``attentive-reader serve``: a local web page and a JSON API to ask a reader about a document.

``app.create_app(reader, data=..., pool=...)`` builds the Starlette app (server-side HTML from
the Jinja templates in ``viz/templates/``, shared with the static heatmap pages, every text
escaped, no JavaScript; the JSON API of
``json_api``); questions are answered off the event loop by a bounded ``pool.AnswerPool``;
``headers.SecurityHeaders`` sets the security headers on every response. The command runs it
with uvicorn on ``127.0.0.1`` unless told otherwise.
"""
