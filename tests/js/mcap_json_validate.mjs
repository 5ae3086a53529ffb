// Checks a recording exported with `shmtool bag export --encoding json`:
// @mcap/core's indexed reader reads every message; each channel must use
// the "json" message encoding with a "jsonschema" schema, which ajv
// compiles; every message must parse as JSON and validate against it. To
// show the schemas are not vacuous, each channel's first message is also
// validated with an unknown key added, which must be refused. Prints one
// JSON object: counts, invalid, rejected_tampered, encodings.
//   node mcap_json_validate.mjs FILE
import { readFile } from "node:fs/promises";
import { McapIndexedReader } from "@mcap/core";
import { loadDecompressHandlers } from "@mcap/support";
import Ajv from "ajv";

const bytes = new Uint8Array(await readFile(process.argv[2]));
const readable = {
  size: async () => BigInt(bytes.length),
  read: async (offset, size) => bytes.subarray(Number(offset), Number(offset + size)),
};
const reader = await McapIndexedReader.Initialize({
  readable,
  decompressHandlers: await loadDecompressHandlers(),
});
const ajv = new Ajv({ allErrors: true, strict: false });
const decoder = new TextDecoder();
const validators = new Map();
const result = { counts: {}, invalid: {}, rejected_tampered: {}, encodings: {}, first: {} };
for (const [id, channel] of reader.channelsById) {
  const schema = reader.schemasById.get(channel.schemaId);
  result.encodings[channel.topic] = `${channel.messageEncoding}/${schema?.encoding}`;
  validators.set(id, ajv.compile(JSON.parse(decoder.decode(schema.data))));
}
for await (const message of reader.readMessages({ validateCrcs: true })) {
  const topic = reader.channelsById.get(message.channelId).topic;
  const validate = validators.get(message.channelId);
  const value = JSON.parse(decoder.decode(message.data));
  result.counts[topic] = (result.counts[topic] ?? 0) + 1;
  if (!validate(value)) {
    result.invalid[topic] = (result.invalid[topic] ?? 0) + 1;
    result.error ??= `${topic}: ${ajv.errorsText(validate.errors)}`;
  }
  if (!(topic in result.first)) {
    result.first[topic] = value;
    result.rejected_tampered[topic] = !validate({ ...value, not_a_field: 1 });
  }
}
console.log(JSON.stringify(result));
