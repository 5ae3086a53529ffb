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
import { exact, writable } from './exact.mjs';

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
