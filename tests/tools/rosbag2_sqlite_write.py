#!/usr/bin/python3
"""Writes a rosbag2 bag folder the way rosbag2's sqlite3 storage writes one,
with Python's sqlite3 and no shmbus code.

  rosbag2_sqlite_write.py SPEC

SPEC (JSON): {"out": FOLDER, "topics": [...] as tests/js/ros2_bag_write.mjs
prints them ({"topic", "type", "definition", "qos", "messages": [{"log_time",
"cdr" (hex)}]}), "distro": "humble" | "jazzy", "files": N, "compression":
"" | "file" | "message"}.

- humble: rosbag2_storage_sqlite3's schema version 3 (tables schema,
  metadata, topics, messages; no message definitions); jazzy: version 4
  with the message_definitions table (ros2msg) and type_description_hash.
- The messages, in log-time order, are split over N files NAME_0.db3 ...
  at equal counts, each file numbering its topics its own way (reversed in
  odd files).
- compression "message": each message's data is one zstd frame (rosbag2's
  zstd compressor, per message); "file": each file is compressed whole,
  NAME_i.db3.zstd, as rosbag2 does after closing it.
- metadata.yaml as rosbag2 writes it (version 5 for humble, 9 for jazzy).
Prints {"files": [...], "messages": N}.
"""
import json
import os
import sqlite3
import sys

import zstandard

HUMBLE = """
CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL);
CREATE TABLE metadata(id INTEGER PRIMARY KEY,metadata_version INTEGER NOT NULL,metadata TEXT NOT NULL);
CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,
  serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,timestamp INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE INDEX timestamp_idx ON messages (timestamp ASC);
"""
JAZZY = """
CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL);
CREATE TABLE metadata(id INTEGER PRIMARY KEY,metadata_version INTEGER NOT NULL,metadata TEXT NOT NULL);
CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,
  serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL,type_description_hash TEXT NOT NULL);
CREATE TABLE message_definitions(id INTEGER PRIMARY KEY,topic_type TEXT NOT NULL,encoding TEXT NOT NULL,
  encoded_message_definition TEXT NOT NULL,type_description_hash TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,timestamp INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE INDEX timestamp_idx ON messages (timestamp ASC);
"""


def write_file(path, spec, topics, messages, odd):
    jazzy = spec["distro"] == "jazzy"
    con = sqlite3.connect(path)
    con.executescript(JAZZY if jazzy else HUMBLE)
    con.execute("INSERT INTO schema VALUES (?, ?)", (4 if jazzy else 3, spec["distro"]))
    order = list(reversed(topics)) if odd else topics
    ids = {}
    for i, t in enumerate(order, start=1):
        ids[t["topic"]] = i
        row = [i, t["topic"], t["type"], "cdr", t["qos"]]
        if jazzy:
            row.append("RIHS01_" + "0" * 64)
        con.execute(f"INSERT INTO topics VALUES ({', '.join('?' * len(row))})", row)
    if jazzy:
        for t in topics:
            con.execute("INSERT INTO message_definitions(topic_type, encoding, encoded_message_definition, "
                        "type_description_hash) VALUES (?, 'ros2msg', ?, ?)",
                        (t["type"], t["definition"], "RIHS01_" + "0" * 64))
    compressor = zstandard.ZstdCompressor()
    for topic, stamp, data in messages:
        if spec["compression"] == "message":
            data = compressor.compress(data)
        con.execute("INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)", (ids[topic], stamp, data))
    con.commit()
    con.close()
    if spec["compression"] == "file":
        with open(path, "rb") as f, open(path + ".zstd", "wb") as z:
            z.write(compressor.compress(f.read()))
        os.remove(path)
        return path + ".zstd"
    return path


def metadata_yaml(spec, files, messages):
    stamps = [m[1] for m in messages]
    counts = {}
    for topic, _, _ in messages:
        counts[topic] = counts.get(topic, 0) + 1
    mode = {"": "", "file": "FILE", "message": "MESSAGE"}[spec["compression"]]
    lines = ["rosbag2_bagfile_information:",
             f"  version: {9 if spec['distro'] == 'jazzy' else 5}",
             "  storage_identifier: sqlite3",
             "  duration:", f"    nanoseconds: {max(stamps) - min(stamps)}",
             "  starting_time:", f"    nanoseconds_since_epoch: {min(stamps)}",
             f"  message_count: {len(messages)}",
             "  topics_with_message_count:"]
    for t in spec["topics"]:
        lines += ["    - topic_metadata:", f"        name: {t['topic']}", f"        type: {t['type']}",
                  "        serialization_format: cdr",
                  "        offered_qos_profiles: " + json.dumps(t["qos"]),
                  f"      message_count: {counts.get(t['topic'], 0)}"]
    lines += [f"  compression_format: \"{'zstd' if mode else ''}\"", f"  compression_mode: \"{mode}\"",
              "  relative_file_paths:"] + [f"    - {os.path.basename(f)}" for f in files]
    lines += ["  files:"]
    for f in files:
        lines += [f"    - path: {os.path.basename(f)}", "      starting_time:",
                  "        nanoseconds_since_epoch: 0", "      duration:", "        nanoseconds: 0",
                  "      message_count: 0"]
    if spec["distro"] == "jazzy":
        lines += ["  custom_data: ~", "  ros_distro: jazzy"]
    return "\n".join(lines) + "\n"


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    out = spec["out"]
    os.makedirs(out, exist_ok=True)
    messages = sorted(((t["topic"], int(m["log_time"]), bytes.fromhex(m["cdr"]))
                       for t in spec["topics"] for m in t["messages"]), key=lambda m: m[1])
    n = spec.get("files", 1)
    per = -(-len(messages) // n)
    name = os.path.basename(os.path.normpath(out))
    files = []
    for i in range(n):
        files.append(write_file(os.path.join(out, f"{name}_{i}.db3"), spec, spec["topics"],
                                messages[i * per:(i + 1) * per], i % 2 == 1))
    with open(os.path.join(out, "metadata.yaml"), "w") as f:
        f.write(metadata_yaml(spec, files, messages))
    print(json.dumps({"files": files, "messages": len(messages)}))


if __name__ == "__main__":
    main()
