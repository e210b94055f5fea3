"""What the dealer's panel (`controller.panel`) and the supervisors' console (`controller.console`) share,
and the uvicorn server of every HTTP endpoint of a tablectl process (the metrics' too):

- `server`: uvicorn inside the process, with its idle- and slow-client limits, and the rejection counts;
- `page_app`: a page's app: the page, its routes, its static files and the shared ones (`static/web.js`),
  behind
  - `security_headers`: the headers on every response, and
  - `page_guard`: host names, `Origin` and the page token, checked before any route runs;
- `json_body`: a client's JSON body, bounded, and the 4xx with its reason;
- `event_stream`: Server-Sent Events: capped, kept alive, ended when the browser goes;
- `sign_in`: a refused sign-in, the wrong-secret limiter, the session cookie;
- `sessions`: the signed-in sessions, their expiry and their caps.

Nothing here imports the panel or the console, and this `__init__` imports nothing.
"""
