#!/usr/bin/env python3
"""An independent reader of TensorBoard event files, written from their definitions.

TFRecord framing (tensorflow/core/lib/io/record_writer.cc): uint64 length (little-endian), masked CRC-32C
of those 8 bytes (uint32), the record, masked CRC-32C of the record. The CRCs are checked with Debian's
python3-crc32c. Each record is an Event (tensorflow/core/util/event.proto), decoded here from the
protobuf wire format by hand:
  Event:          wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5
  Summary:        value = 1 (repeated Value)
  Summary.Value:  tag = 1 (string), simple_value = 2 (float)

Usage: tfevents_reference.py FILE
Prints {"events": [{"wall_time", "step", "file_version"?, "scalars"?: {tag: value}}]} as JSON; exits 1
with one line on stderr when a CRC does not match or a record is malformed.
"""
import json
import struct
import sys

import crc32c


def masked_crc(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("varint runs past the end")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of each field of one message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire} of field {number}")
        if pos > len(buf):
            raise ValueError(f"field {number} runs past the end")
        yield number, wire, value


def decode_event(buf):
    event = {"wall_time": 0.0, "step": 0}
    for number, wire, value in fields(buf):
        if number == 1 and wire == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            event["step"] = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 3 and wire == 2:
            event["file_version"] = value.decode("utf-8")
        elif number == 5 and wire == 2:
            scalars = event.setdefault("scalars", {})
            for vnum, vwire, vbuf in fields(value):
                if vnum != 1 or vwire != 2:
                    continue
                tag, simple = None, None
                for n, w, v in fields(vbuf):
                    if n == 1 and w == 2:
                        tag = v.decode("utf-8")
                    elif n == 2 and w == 5:
                        simple = struct.unpack("<f", v)[0]
                if tag is None or simple is None:
                    raise ValueError("a summary value without tag or simple_value")
                scalars[tag] = simple
    return event


def read_records(data):
    pos, index = 0, 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"record {index}: truncated header")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked_crc(header):
            raise ValueError(f"record {index}: length CRC mismatch")
        start = pos + 12
        if start + length + 4 > len(data):
            raise ValueError(f"record {index}: truncated data")
        record = data[start:start + length]
        (data_crc,) = struct.unpack("<I", data[start + length:start + length + 4])
        if data_crc != masked_crc(record):
            raise ValueError(f"record {index}: data CRC mismatch")
        yield record
        pos = start + length + 4
        index += 1


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    try:
        events = [decode_event(r) for r in read_records(data)]
    except ValueError as e:
        print(f"tfevents_reference: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"events": events}))


if __name__ == "__main__":
    main()
