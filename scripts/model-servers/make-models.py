#!/usr/bin/env python3
"""Writes the small real models the e2e tests load into Triton, MLServer and KServe.

    <mlserver venv>/bin/python make-models.py <triton|mlserver|kserve|all> <out-dir> [--key KEY]

Each variant is a complete model dir, <out-dir>/<server>/<variant>/, that a test copies to <repo>/<model name>/:
nothing in a variant names the model, so any dir name works. No variant holds a SUCCESS.* marker (modelsync
writes its own when it installs one). Each holds a stand-in.json saying what its real server does with it (the V2
stand-in's profiles read it; the real servers ignore it). Inference tells v1 from v2: the answer is 1 for v1 and 2 for v2
(test/real-servers/models.ts sends the requests).

  variant        triton (python backend)          mlserver                          kserve (kserve-server.py)
  v1, v2         OUTPUT0 = INPUT0 + 1 / + 2       sklearn DummyRegressor(constant   model.json {"add": 1} / {"add": 2}
                 (FP32 [-1])                      1.0 / 2.0), version "v1" / "v2"   (answers input + add)
  bad-config     config.pbtxt does not parse      model-settings.json is not JSON   model.json is not JSON
  raise-on-load  initialize() raises              load() raises (custom runtime)    model.py raises at load
  slow-unload    as v1, finalize() sleeps 2 s     -                                 -
  (the raise is RuntimeError("raise-on-load: boom") everywhere)

With --key, the run is idempotent and safe to run concurrently: under flock(<out-dir>.lock), nothing is done for a
server whose <out-dir>/<server>.stamp already holds KEY; otherwise its dir is written aside and renamed into place,
and its stamp is written last. Triton's and KServe's variants need only the stdlib; MLServer's need scikit-learn and
joblib (the mlserver venv), imported only for them.
"""
import fcntl
import json
import os
import pathlib
import shutil
import sys

SERVERS = ("triton", "mlserver", "kserve")
BOOM = "raise-on-load: boom"

TRITON_CONFIG = """backend: "python"
max_batch_size: 0
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]
instance_group [
  {
    kind: KIND_CPU
    count: 1
  }
]
"""

TRITON_MODEL = '''import time

import numpy as np
import triton_python_backend_utils as pb_utils

ADD = {add}
UNLOAD_SLEEP_S = {unload_sleep}
RAISE_ON_LOAD = {raise_on_load!r}


class TritonPythonModel:
    def initialize(self, args):
        if RAISE_ON_LOAD:
            raise RuntimeError(RAISE_ON_LOAD)

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            y = (x + np.float32(ADD)).astype(np.float32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT0", y)]))
        return responses

    def finalize(self):
        if UNLOAD_SLEEP_S:
            time.sleep(UNLOAD_SLEEP_S)
'''

MLSERVER_BOOM = f'''from mlserver import MLModel


class BoomModel(MLModel):
    async def load(self) -> bool:
        raise RuntimeError({BOOM!r})
'''


def write(path: pathlib.Path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def triton(out: pathlib.Path):
    def model(variant, add=1, unload_sleep=0, raise_on_load="", config=TRITON_CONFIG):
        d = out / variant
        write(d / "config.pbtxt", config)
        write(d / "1" / "model.py",
              TRITON_MODEL.format(add=add, unload_sleep=unload_sleep, raise_on_load=raise_on_load))

    model("v1", add=1)
    model("v2", add=2)
    model("bad-config", config='backend: "python"\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] \n')
    model("raise-on-load", raise_on_load=BOOM)
    model("slow-unload", add=1, unload_sleep=2)


def mlserver(out: pathlib.Path):
    import joblib
    import numpy as np
    from sklearn.dummy import DummyRegressor

    def sk(variant, constant):
        d = out / variant
        d.mkdir(parents=True)
        estimator = DummyRegressor(strategy="constant", constant=constant).fit(np.zeros((2, 2)), [0.0, 0.0])
        joblib.dump(estimator, d / "model.joblib")
        write(d / "model-settings.json", json.dumps({
            "implementation": "mlserver_sklearn.SKLearnModel",
            "parameters": {"uri": "./model.joblib", "version": variant},
        }, indent=2) + "\n")

    sk("v1", 1.0)
    sk("v2", 2.0)
    write(out / "bad-config" / "model-settings.json", '{"implementation": "mlserver_sklearn.SKLearnModel", ')
    write(out / "raise-on-load" / "boom.py", MLSERVER_BOOM)
    write(out / "raise-on-load" / "model-settings.json", json.dumps({"implementation": "boom.BoomModel"}) + "\n")


def kserve(out: pathlib.Path):
    write(out / "v1" / "model.json", json.dumps({"add": 1}) + "\n")
    write(out / "v2" / "model.json", json.dumps({"add": 2}) + "\n")
    write(out / "bad-config" / "model.json", '{"add": ')
    write(out / "raise-on-load" / "model.json", json.dumps({"add": 1}) + "\n")
    write(out / "raise-on-load" / "model.py", f"raise RuntimeError({BOOM!r})\n")


MAKERS = {"triton": triton, "mlserver": mlserver, "kserve": kserve}

# What each variant does on its real server, for the V2 stand-in's profiles (src/testing/v2-repository.ts), which
# read it from the model dir; the real servers ignore the file. The conformance suite holds the two to each other.
STAND_IN = {
    "v1": {"adds": 1},
    "v2": {"adds": 2},
    "slow-unload": {"adds": 1},
    "bad-config": {"fails": "config"},
    "raise-on-load": {"fails": "raised"},
}


def describe(out: pathlib.Path):
    for variant in os.listdir(out):
        write(out / variant / "stand-in.json", json.dumps(STAND_IN[variant]) + "\n")


def replace_dir(fresh: pathlib.Path, target: pathlib.Path):
    """Puts `fresh` at `target`, the old one (if any) renamed aside first and then deleted."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def make(which: str, out: pathlib.Path, key: str):
    out.mkdir(parents=True, exist_ok=True)
    for name in SERVERS if which == "all" else (which,):
        # One stamp per server: the demo makes one server's models, the tests all three, into the same dir.
        stamp = out / f"{name}.stamp"
        if key and stamp.is_file() and stamp.read_text().strip() == key and (out / name).is_dir():
            print(f"[model-servers] models: {name} up to date ({out / name})", file=sys.stderr)
            continue
        stamp.unlink(missing_ok=True)
        fresh = out / f".{name}.tmp-{os.getpid()}"
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
        MAKERS[name](fresh)
        describe(fresh)
        replace_dir(fresh, out / name)
        print(f"[model-servers] models: wrote {out / name}: {', '.join(sorted(os.listdir(out / name)))}",
              file=sys.stderr)
        if key:
            (out / f"{name}.stamp.new").write_text(key + "\n")
            (out / f"{name}.stamp.new").rename(stamp)


def main():
    args = sys.argv[1:]
    key = ""
    if len(args) == 4 and args[2] == "--key":
        key, args = args[3], args[:2]
    if len(args) != 2 or args[0] not in (*SERVERS, "all"):
        sys.exit(__doc__)
    which, out = args[0], pathlib.Path(args[1]).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        make(which, out, key)


if __name__ == "__main__":
    main()
