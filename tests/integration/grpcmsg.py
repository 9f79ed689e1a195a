"""The messages of weft-app's gRPC service (the .proto in src/app/app_grpc.h), built with
Debian's python3-protobuf from descriptors made here, so the encoding is protobuf's own: shared
by the tests that call the service (test_app_grpc.py, test_mesh_grpc.py)."""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory



def _messages():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="weft_test_shop.proto", package="shop",
                                             syntax="proto3")

    def msg(name, *fields):
        m = fdp.message_type.add(name=name)
        for fname, num, ftype in fields:
            m.field.add(name=fname, number=num, type=ftype, label=F.LABEL_OPTIONAL)

    msg("EchoRequest", ("message", 1, F.TYPE_STRING), ("delay_ms", 2, F.TYPE_INT32),
        ("status", 3, F.TYPE_INT32), ("status_message", 4, F.TYPE_STRING),
        ("count", 5, F.TYPE_INT32))
    msg("EchoResponse", ("message", 1, F.TYPE_STRING), ("hostname", 2, F.TYPE_STRING),
        ("index", 3, F.TYPE_INT32))
    # grpc.health.v1 (status is an enum there; int32 is the same varint on the wire)
    msg("HealthCheckRequest", ("service", 1, F.TYPE_STRING))
    msg("HealthCheckResponse", ("status", 1, F.TYPE_INT32))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)
    return {n: factory.GetPrototype(pool.FindMessageTypeByName("shop." + n))
            for n in ("EchoRequest", "EchoResponse", "HealthCheckRequest",
                      "HealthCheckResponse")}


MSG = _messages()
EchoRequest, EchoResponse = MSG["EchoRequest"], MSG["EchoResponse"]
