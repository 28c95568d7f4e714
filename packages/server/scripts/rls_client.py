#!/usr/bin/env python3
"""A rate limit service client that is not Node: gRPC's C core (Debian's python3-grpcio) and
google.protobuf message classes built at run time from the service's own protos.

The protos arrive as the serialized FileDescriptorProtos @grpc/proto-loader makes of the shipped
.proto files (a JSON list of base64 strings, in the environment variable SLUICE_RLS_DESCRIPTORS). protobufjs writes
one file per package, with type names relative to their scope and no imports; they are resolved
here and each file gets the imports it needs, the google.protobuf types coming from this
protobuf's own well-known files.

  rls_client.py serve
      Reads one JSON object a line on stdin, {"id", "address", "request"} with the request in
      proto3 JSON, calls ShouldRateLimit and writes {"id", "response"} (proto3 JSON) or
      {"id", "error": {"code", "details"}} a line on stdout. {"id", "address", "close": true}
      closes the connection to that address and answers {"id"}.
  rls_client.py load ADDRESS --processes P --calls N --in-flight C
                [--max-seconds S] REQUEST_JSON
      P processes, each on its own connection, send N calls each with C in flight (or stop after
      S seconds) and report one JSON line: calls, seconds, callsPerSecond and the answers by code.
"""
import argparse
import base64
import json
import multiprocessing
import os
import sys
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
# Imported for their side effect: the well-known files in the default pool.
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2, wrappers_pb2  # noqa: F401

METHOD = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'
WELL_KNOWN = {
    'duration': ['Duration'],
    'struct': ['Struct', 'Value', 'ListValue', 'NullValue'],
    'timestamp': ['Timestamp'],
    'wrappers': ['DoubleValue', 'FloatValue', 'Int64Value', 'UInt64Value', 'Int32Value',
                 'UInt32Value', 'BoolValue', 'StringValue', 'BytesValue'],
}


def type_names(prefix, messages, enums):
    """Every fully qualified message and enum name declared under `prefix`."""
    for enum in enums:
        yield prefix + enum.name
    for message in messages:
        yield prefix + message.name
        yield from type_names(prefix + message.name + '.', message.nested_type, message.enum_type)


def resolve(scope, name, home):
    """A type name as protoc resolves it: innermost scope first, then outward."""
    if name.startswith('.'):
        return name[1:]
    parts = scope.split('.')
    while True:
        full = '.'.join(parts + [name])
        if full in home:
            return full
        if not parts:
            raise KeyError('unknown type %s in %s' % (name, scope))
        parts.pop()


def qualify(file, scope, messages, home, imports):
    """Rewrites field type names to fully qualified ones and collects the files they live in."""
    for message in messages:
        inner = scope + '.' + message.name
        for field in message.field:
            if field.type_name:
                full = resolve(inner, field.type_name, home)
                field.type_name = '.' + full
                if home[full] != file.name:
                    imports.add(home[full])
        qualify(file, inner, message.nested_type, home, imports)


def message_classes():
    """The request and response classes of ShouldRateLimit, from the serialized protos."""
    files = [descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(item))
             for item in json.loads(os.environ['SLUICE_RLS_DESCRIPTORS'])]
    home = {'google.protobuf.' + name: 'google/protobuf/%s.proto' % file
            for file, names in WELL_KNOWN.items() for name in names}
    ours = {f.name: f for f in files if f.package != 'google.protobuf'}
    for file in ours.values():
        for name in type_names(file.package + '.', file.message_type, file.enum_type):
            home[name] = file.name
    for file in ours.values():
        imports = set()
        qualify(file, file.package, file.message_type, home, imports)
        file.dependency[:] = sorted(imports)
    pool = descriptor_pool.Default()
    added = set(home[name] for name in home if name.startswith('google.protobuf.'))

    def add(file):
        for name in file.dependency:
            if name not in added:
                add(ours[name])
        pool.Add(file)
        added.add(file.name)

    # ShouldRateLimit's files and what they import alone: the other services' protos (the
    # quota service's map fields, say) never need to build here.
    for file in ours.values():
        if file.package == 'envoy.service.ratelimit.v3' and file.name not in added:
            add(file)
    factory = message_factory.MessageFactory(pool)
    request = factory.GetPrototype(pool.FindMessageTypeByName('envoy.service.ratelimit.v3.RateLimitRequest'))
    response = factory.GetPrototype(pool.FindMessageTypeByName('envoy.service.ratelimit.v3.RateLimitResponse'))
    return request, response


def should_rate_limit(channel, request_class, response_class):
    return channel.unary_unary(METHOD, request_serializer=request_class.SerializeToString,
                               response_deserializer=response_class.FromString)


def serve():
    request_class, response_class = message_classes()
    channels = {}
    calls = {}
    for line in sys.stdin:
        asked = json.loads(line)
        address = asked['address']
        if asked.get('close'):
            if address in channels:
                channels.pop(address).close()
                del calls[address]
            sys.stdout.write(json.dumps({'id': asked['id']}) + '\n')
            sys.stdout.flush()
            continue
        if address not in calls:
            channels[address] = grpc.insecure_channel(address)
            calls[address] = should_rate_limit(channels[address], request_class, response_class)
        try:
            request = json_format.ParseDict(asked['request'], request_class())
            reply = calls[address](request, timeout=10)
            answer = {'id': asked['id'], 'response': json_format.MessageToDict(reply)}
        except grpc.RpcError as error:
            answer = {'id': asked['id'], 'error': {'code': error.code().name, 'details': error.details()}}
        sys.stdout.write(json.dumps(answer) + '\n')
        sys.stdout.flush()


def load_process(args):
    """One load process: its own connection, `calls` calls with `in_flight` at a time."""
    address, request_json, calls, in_flight, max_seconds = args
    request_class, response_class = message_classes()
    channel = grpc.insecure_channel(address)
    call = should_rate_limit(channel, request_class, response_class)
    request = json_format.ParseDict(json.loads(request_json), request_class())
    # The connection first, before the clock starts: a look (hits 0 on every descriptor) charges nothing.
    look = request_class()
    look.CopyFrom(request)
    for descriptor in look.descriptors:
        descriptor.hits_addend.value = 0
    call(look, timeout=10)
    codes = {}
    pending = []
    sent = 0
    started = time.monotonic()
    deadline = started + max_seconds
    while sent < calls or pending:
        while sent < calls and len(pending) < in_flight and time.monotonic() < deadline:
            pending.append(call.future(request, timeout=10))
            sent += 1
        if not pending:
            break
        future = pending.pop(0)
        try:
            code = response_class.Code.Name(future.result().overall_code)
        except grpc.RpcError as error:
            code = error.code().name
        codes[code] = codes.get(code, 0) + 1
    seconds = time.monotonic() - started
    channel.close()
    return {'calls': sent, 'seconds': seconds, 'codes': codes}


def load(options):
    jobs = [(options.address, options.request, options.calls, options.in_flight,
             options.max_seconds)] * options.processes
    with multiprocessing.get_context('spawn').Pool(options.processes) as pool:
        results = pool.map(load_process, jobs)
    calls = sum(r['calls'] for r in results)
    seconds = max(r['seconds'] for r in results)
    codes = {}
    for result in results:
        for code, n in result['codes'].items():
            codes[code] = codes.get(code, 0) + n
    print(json.dumps({'processes': options.processes, 'calls': calls, 'seconds': round(seconds, 3),
                      'callsPerSecond': round(calls / seconds), 'codes': codes}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    commands.add_parser('serve')
    loading = commands.add_parser('load')
    loading.add_argument('address')
    loading.add_argument('request')
    loading.add_argument('--processes', type=int, default=4)
    loading.add_argument('--calls', type=int, default=500)
    loading.add_argument('--in-flight', type=int, default=8)
    loading.add_argument('--max-seconds', type=float, default=20.0)
    options = parser.parse_args()
    if options.command == 'load' and not options.address.startswith('127.0.0.1:'):
        parser.error('the load run only asks 127.0.0.1')
    if options.command == 'serve':
        serve()
    else:
        load(options)


if __name__ == '__main__':
    main()
