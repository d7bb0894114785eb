#!/usr/bin/env python3
"""A KServe 0.21 ModelServer with a model repository that loads `<models_dir>/<name>/` on demand.

    <kserve venv>/bin/python kserve-server.py --models_dir DIR --http_port P --enable_grpc false --workers 1
        [--http_host ADDR] [--load_at_startup]

Nothing is loaded at start (like Triton's explicit mode) unless --load_at_startup is given, which loads
every directory whose name does not start with "." (so modelsync's .tmp-*/.old-* dirs are never touched);
a failing one is logged and skipped.

A model dir holds `model.json` = {"add": <number>, "load_sleep_s": <seconds, optional>} and optionally
`model.py`, which is run (runpy) at every load: an exception there fails the load; a global ADD overrides
"add". Inference: V1 `POST /v1/models/<n>:predict` {"instances": [[1, 2], [3]]} -> {"predictions": [...]}
with every number + add; V2 `POST /v2/models/<n>/infer` (FP32/INT64/FP64 tensor) -> the same tensor + add.

--http_host: KServe's REST server binds 0.0.0.0 (uvicorn's host is hard-coded in kserve/protocol/rest/server.py,
with no flag); this one sets it (the tests bind 127.0.0.1). All other flags are KServe's own (--http_port,
--grpc_port, --enable_grpc, --workers; parsed by kserve.model_server at import). Keep --workers 1: each worker
process has its own registry, so a model loaded through one is missing in the others.

This is the launcher the e2e tests run as "the user's own KServe image" of deploy/overlays/kserve: a real
model server built on kserve 0.21.0 the way its docs show (a ModelRepository subclass), with toy models.
"""
import argparse
import asyncio
import json
import logging
import os
import runpy
from typing import Dict, Union

import numpy as np

import kserve
from kserve import InferRequest, InferResponse, Model, ModelRepository, model_server
from kserve.utils.utils import get_predict_input, get_predict_response

log = logging.getLogger("kserve-server")


class AddModel(Model):
    """Answers its input + a constant read from model.json (or set by model.py) at load."""

    def __init__(self, name: str, model_dir: str):
        super().__init__(name)
        self.model_dir = model_dir
        self.add = None

    def load_files(self) -> float:
        # Runs in a worker thread: file reads and model.py may block.
        with open(os.path.join(self.model_dir, "model.json")) as f:
            conf = json.load(f)
        add = conf["add"]
        sleep = float(conf.get("load_sleep_s", 0))
        py = os.path.join(self.model_dir, "model.py")
        if os.path.exists(py):
            add = runpy.run_path(py).get("ADD", add)
        return float(add), sleep

    async def predict(self, payload: Union[Dict, InferRequest], headers: Dict[str, str] = None):
        x = get_predict_input(payload)
        if isinstance(x, np.ndarray) and x.dtype == object:  # ragged V1 instances
            result = [(np.asarray(r, dtype=float) + self.add).tolist() for r in x]
        else:
            result = np.asarray(x) + self.add
        return get_predict_response(payload, result, self.name)


class DirRepository(ModelRepository):
    """Loads <models_dir>/<name> on POST /v2/repository/models/<name>/load; never scans hidden dirs."""

    async def load(self, name: str) -> bool:
        model = AddModel(name, os.path.join(self.models_dir, name))
        add, sleep = await asyncio.to_thread(model.load_files)
        if sleep:
            await asyncio.sleep(sleep)
        model.add = add
        model.ready = True
        self.update(model)  # replaces a loaded model of the same name (the old object is just dropped)
        return model.ready

    async def load_non_hidden(self):
        for name in sorted(os.listdir(self.models_dir)):
            if name.startswith(".") or not os.path.isdir(os.path.join(self.models_dir, name)):
                continue
            try:
                await self.load(name)
                log.info("loaded %s at startup", name)
            except Exception as e:  # noqa: BLE001 - a bad model must not stop the server
                log.error("could not load %s at startup: %r", name, e)


def bind_rest_server_to(host: str):
    """Makes every uvicorn.Config (KServe's REST server builds one with host="0.0.0.0") listen on `host`."""
    import uvicorn

    base = uvicorn.Config

    class HostConfig(base):
        def __init__(self, *args, **kwargs):
            kwargs["host"] = host
            super().__init__(*args, **kwargs)

    uvicorn.Config = HostConfig


def main():
    parser = argparse.ArgumentParser(parents=[model_server.parser])
    parser.add_argument("--models_dir", required=True)
    parser.add_argument("--http_host", default=None, help="the address to listen on (KServe's own: 0.0.0.0)")
    parser.add_argument("--load_at_startup", action="store_true")
    args, _ = parser.parse_known_args()
    if args.http_host:
        bind_rest_server_to(args.http_host)
    repo = DirRepository(os.path.abspath(args.models_dir))
    if args.load_at_startup:
        asyncio.run(repo.load_non_hidden())
    kserve.ModelServer(registered_models=repo).start([])


if __name__ == "__main__":
    main()
