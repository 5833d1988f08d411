// The Foxglove side of ros2/rosmsg's cross-check (foxglove_test.go): reads
// {"cases": [{"type", "definition", "hex", "json"}]} on stdin, and for each
// case decodes hex with @foxglove/rosmsg2-serialization's MessageReader and
// encodes json with its MessageWriter, both from the definition text as
// @foxglove/rosmsg parses it. Writes {"results": [{"decoded", "encoded",
// "error"}]} on stdout. int64/uint64 travel as decimal strings, arrays as
// plain arrays (ros2/rosmsg's JSON forms).
"use strict";
const { parse } = require("@foxglove/rosmsg");
const { MessageReader, MessageWriter } = require("@foxglove/rosmsg2-serialization");

function replacer(_key, v) {
  if (typeof v === "bigint") return v.toString();
  if (ArrayBuffer.isView(v)) return Array.from(v);
  return v;
}

// toWriterValue turns the JSON forms into what MessageWriter takes:
// int64/uint64 as BigInt.
function toWriterValue(defs, fields, obj) {
  const out = {};
  for (const f of fields) {
    if (f.isConstant) continue;
    let v = obj[f.name];
    const one = (x) => {
      if (f.isComplex) return toWriterValue(defs, defs.get(f.type), x);
      if (f.type === "int64" || f.type === "uint64") return BigInt(x);
      return x;
    };
    out[f.name] = f.isArray ? v.map(one) : one(v);
  }
  return out;
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const { cases } = JSON.parse(input);
  const results = cases.map((c) => {
    try {
      const defs = parse(c.definition, { ros2: true });
      const byName = new Map(defs.map((d) => [d.name ?? "", d.definitions]));
      const reader = new MessageReader(defs);
      const writer = new MessageWriter(defs);
      const decoded = reader.readMessage(Buffer.from(c.hex, "hex"));
      const value = toWriterValue(byName, defs[0].definitions, JSON.parse(c.json));
      const encoded = Buffer.from(writer.writeMessage(value)).toString("hex");
      return { decoded: JSON.parse(JSON.stringify(decoded, replacer)), encoded };
    } catch (e) {
      return { error: String(e && e.stack ? e.stack : e) };
    }
  });
  process.stdout.write(JSON.stringify({ results }));
});
