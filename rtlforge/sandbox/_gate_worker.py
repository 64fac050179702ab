"""The gate's worker process: reads framed JSON requests on stdin, answers on stdout.

Runs inside the jail under an address-space limit (see :mod:`rtlforge.sandbox.gate`); it only
parses text from memory and never opens a file the request names.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    from rtlforge.core.errors import SecurityViolation
    from rtlforge.sandbox.security import Text, check_contained, check_sources

    def files(key: str) -> list[Text]:
        return [Text(name=name, content=text) for name, text in request[key]]

    try:
        if request["op"] == "check":
            check_sources(files("files"), role=request["role"], available=request["available"])
        elif request["op"] == "contain":
            check_contained(files("design"), files("testbench"), files("support"),
                            predefines=[tuple(v) for v in request.get("predefines", [[]])])
        else:
            return {"error": f"unknown request {request['op']!r}"}
    except SecurityViolation as exc:
        return {"violation": {"message": str(exc), "file": exc.file, "line": exc.line,
                              "construct": exc.construct, "source_line": exc.source_line,
                              "hint": exc.hint}}
    return {"ok": True}


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer

    def send(msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        out.write(len(body).to_bytes(4, "big") + body)
        out.flush()

    import rtlforge.sandbox.security  # noqa: F401 - load pyslang before saying ready

    send({"ready": True})
    while True:
        head = inp.read(4)
        if len(head) < 4:
            return
        request = json.loads(inp.read(int.from_bytes(head, "big")))
        try:
            if request.get("op") == "batch":  # in order, up to the first violation or error
                results = []
                for sub in request["requests"]:
                    results.append(_answer(sub))
                    if "ok" not in results[-1]:
                        break
                send({"results": results})
            else:
                send(_answer(request))
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the client as an internal error
            send({"error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
