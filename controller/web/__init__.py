"""What the dealer's panel (`controller.panel`) and the supervisors' console (`controller.console`) share,
and the uvicorn server of every HTTP endpoint of a tablectl process (the metrics' too):

- `server`: uvicorn inside the process, with its idle- and slow-client limits, and the rejection counts;
- `json_body`: a client's JSON body, bounded in size, time and depth.

Nothing here imports the panel or the console. This `__init__` imports nothing.
"""
