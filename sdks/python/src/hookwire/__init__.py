"""hookwire for Python: write an AGENT-HOOKS-0.1 interceptor as a gRPC
service a hookwire host binds (unary or over the Multiplex stream), and
bind hookwire services from hosts on the official ``agent_hooks`` SDK
(:mod:`hookwire.agent_hooks`), and decide approvals as an approver of a
hookwire approval service (:mod:`hookwire.approvals`).

The public surface: :class:`Interceptor` (class or decorator API),
:class:`Server`/:func:`serve`/:func:`run` to serve it, the verdict
builders :func:`allow`, :func:`deny`, :func:`transform`, :func:`warn`,
:func:`escalate` and :class:`Response`, the typed :class:`Context`, and
exact JSON in :mod:`hookwire.jsonx`.
"""

from .cli import arg_parser, run
from .context import Context, InvalidContext
from .dispatch import time_remaining
from .jsonx import InvalidJson
from .points import POINTS, SPEC
from .server import Interceptor, Server, manifest, serve
from .verdict import InvalidVerdict, Response, allow, deny, escalate, transform, validate, warn

__version__ = "0.1.0"

__all__ = [
    "POINTS", "SPEC", "Context", "Interceptor", "InvalidContext", "InvalidJson", "InvalidVerdict",
    "Response", "Server", "allow", "arg_parser", "deny", "escalate", "manifest", "run", "serve",
    "time_remaining", "transform", "validate", "warn",
]
