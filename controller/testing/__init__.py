"""The testing kit: what the tests (tests/), the benchmarks (bench/) and the docs' scripts (docs/) share to
run the table for real without its hardware. Not used by the product: nothing in controller/, drivers/ or
calibration/ outside this package imports it.

- `mosquitto`: a real Mosquitto on a free port (`MosquittoBroker`, `ExampleBroker` with the shipped example
  config, `secured_broker`), `MqttRecorder` (a paho client recording what the table publishes),
  `wait_until`, `free_port`, `find_binary` / `require_binary`;
- `table_process`: `tablectl run` in its own process (`ServiceProcess`, optionally hooked to die at a chosen
  instant; `TableProcess`, one table of a studio with broker passwords) and the service tests' table;
- `demo_process`: `tablectl demo` in subprocesses; `bus_process`: a `TableBus` alone in a process
  (`python -m controller.testing.bus_process`), for the Last Will;
- `console`: the supervisor's console served in-process and driven by headless Chromium;
- `studio_sim`: many simulated tables on one MQTT connection (the console's tests, benchmark, screenshots);
- `line_wire`, `line_link`: line devices' frames spelled out, a device wired to its host session directly
  (`LineWire`) or served on a real pty through the real runner (`served_on_pty`, `RecordingLink`);
- `card_table`: driving a card game's flow as the runtime does (`DrivesCardFlow`) and reading its output;
- `shoe_capture`, `blackjack_capture`: realistic `shoe-line` captures recorded on a virtual clock;
- `wheel_faults`: the simulated SS2 wheel's every fault at the rates the long roulette session and the
  replay benchmark run it with, on its virtual clock;
- `baccarat_reference`, `blackjack_reference`, `andar_bahar_reference`: independent models of the games,
  written without the controller's code, to check the flows against.

The dependencies that only the tests install (pyproject's `test` extra: paho-mqtt, pytest, hypothesis,
httpx, playwright) are imported by the modules that need them, never here: each module's docstring says
which it needs.
"""
