"""The generated gRPC code of ``proto/hookwire/v1/interceptor.proto``
(``interceptor_pb2``, ``interceptor_pb2_grpc``), checked in and written by
``sdks/python/scripts/gen.py``; ``PROTO_SHA256`` names the proto it came
from."""
