// ROS 2 CDR as Foxglove writes and reads it, for shmbus's codec tests:
// @foxglove/rosmsg parses each case's ros2msg definition, and
// @foxglove/rosmsg2-serialization writes each of its JSON messages as CDR
// and reads each of the CDR messages shmbus wrote.
//   node ros2_cdr.mjs FILE
// FILE: {"cases": [{"definition": TEXT, "messages": [JSON...], "cdr": [HEX...]}]}
// (64-bit integers as decimal strings). Prints {"cases": [{"written":
// [HEX...], "read": [JSON...]}]}, what was read in the exact form
// (exact.mjs).
import { readFile } from 'node:fs/promises';
import { parse } from '@foxglove/rosmsg';
import { MessageReader, MessageWriter } from '@foxglove/rosmsg2-serialization';
import { exact } from './exact.mjs';

/// `value` of a field of `type` as the writer takes it: 64-bit integers as
/// BigInt, nested messages field by field.
function writable(value, type, types) {
  if (type === 'int64' || type === 'uint64') return BigInt(value);
  const nested = types.get(type);
  if (nested === undefined || value === null || typeof value !== 'object') return value;
  const out = {};
  for (const f of nested) {
    if (f.isConstant === true || !(f.name in value)) continue;
    const v = value[f.name];
    out[f.name] = f.isArray === true ? v.map((e) => writable(e, f.type, types)) : writable(v, f.type, types);
  }
  return out;
}

const input = JSON.parse(await readFile(process.argv[2], 'utf8'));
const cases = [];
for (const c of input.cases) {
  const definitions = parse(c.definition, { ros2: true });
  const types = new Map(definitions.map((d) => [d.name ?? '', d.definitions]));
  const root = definitions[0].name ?? '';
  const writer = new MessageWriter(definitions);
  const reader = new MessageReader(definitions);
  cases.push({
    written: c.messages.map((m) => Buffer.from(writer.writeMessage(writable(m, root, types))).toString('hex')),
    read: c.cdr.map((b) => exact(reader.readMessage(new Uint8Array(Buffer.from(b, 'hex'))))),
  });
}
console.log(JSON.stringify({ cases }));
