// Test-only: the independent MCAP implementation recording/mcap is
// checked against (@mcap/core, Foxglove's TypeScript library; zstd and
// lz4 from @foxglove/wasm-zstd, @foxglove/wasm-lz4 and lz4js).
// Reads one JSON request on stdin, prints one JSON answer on stdout.
//
//   {"mode": "read", "files": [path, ...]}
//     each file through McapStreamReader (validateCrcs) and
//     McapIndexedReader (summary CRC, chunk CRCs), and the data-section
//     CRC recomputed over every byte before Data End (node's zlib.crc32);
//     attachments (their CRCs checked) and metadata through the indexes.
//     With "ros2": true, every message of a channel with a ros2msg schema
//     and cdr encoding is decoded by @foxglove/rosmsg2-serialization from
//     the schema text in the file: per topic the count and the first value.
//   {"mode": "write", "cases": [{file, chunked, chunkSize, compression,
//     summary, header, schemas, channels, messages}]}
//     each case written with McapWriter.
// Message data travels as hex; times as decimal strings (uint64).
"use strict";
const fs = require("fs");
const zlib = require("zlib");
const { McapStreamReader, McapIndexedReader, McapWriter } = require("@mcap/core");
const zstd = require("@foxglove/wasm-zstd");
const lz4 = require("@foxglove/wasm-lz4");
const lz4js = require("lz4js");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");

const decompressHandlers = {
  zstd: (data, size) => zstd.decompress(data, Number(size)),
  lz4: (data, size) => lz4(data, Number(size)),
};

const msgOut = (m) => ({
  channel: m.channelId,
  seq: m.sequence,
  log: m.logTime.toString(),
  pub: m.publishTime.toString(),
  data: Buffer.from(m.data).toString("hex"),
});

function dataEndAt(buf) {
  const footerAt = buf.length - 8 - 29;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const summaryStart = dv.getBigUint64(footerAt + 9, true);
  const at = summaryStart !== 0n ? Number(summaryStart) - 13 : footerAt - 13;
  if (buf[at] !== 0x0f) throw new Error(`no Data End record at ${at}`);
  return { at, crc: dv.getUint32(at + 9, true) };
}

// ros2Decoder decodes the messages of ros2msg/cdr channels with the
// schema text the file carries, as Foxglove does.
function ros2Decoder(schemasById, channelsById) {
  const readers = new Map();
  const topics = {};
  return {
    topics,
    add(rec) {
      const ch = channelsById.get(rec.channelId);
      const sc = ch && schemasById.get(ch.schemaId);
      if (!sc || sc.encoding !== "ros2msg" || ch.messageEncoding !== "cdr") return;
      let r = readers.get(sc.id);
      if (!r) {
        r = new MessageReader(parse(new TextDecoder().decode(sc.data), { ros2: true }));
        readers.set(sc.id, r);
      }
      const v = r.readMessage(rec.data);
      const t = (topics[ch.topic] ??= { count: 0 });
      t.count++;
      // First value as JSON: uint64 as strings, byte arrays as their length,
      // other typed arrays as arrays.
      const plain = (k, x) =>
        typeof x === "bigint" ? x.toString()
        : x instanceof Uint8Array ? { bytes: x.length }
        : ArrayBuffer.isView(x) ? Array.from(x)
        : x;
      if (t.count === 1) t.first = JSON.parse(JSON.stringify(v, plain));
    },
  };
}

async function readFile(path, ros2) {
  const buf = fs.readFileSync(path);
  const out = { file: path };
  // Stream reader: every record, chunk CRCs validated.
  const sr = new McapStreamReader({ decompressHandlers, validateCrcs: true });
  sr.append(buf);
  const stream = [];
  const kinds = {};
  const schemas = new Map();
  const channels = new Map();
  const dec = ros2Decoder(schemas, channels);
  for (let rec; (rec = sr.nextRecord()); ) {
    kinds[rec.type] = (kinds[rec.type] ?? 0) + 1;
    if (rec.type === "Schema") schemas.set(rec.id, rec);
    if (rec.type === "Channel") channels.set(rec.id, rec);
    if (rec.type === "Message") {
      if (ros2) dec.add(rec);
      else stream.push(msgOut(rec));
    }
    if (rec.type === "Header") out.header = { profile: rec.profile, library: rec.library };
    if (rec.type === "Statistics") {
      out.statistics = {
        messageCount: rec.messageCount.toString(),
        channelCount: rec.channelCount,
        schemaCount: rec.schemaCount,
        chunkCount: rec.chunkCount,
        start: rec.messageStartTime.toString(),
        end: rec.messageEndTime.toString(),
      };
    }
  }
  if (!sr.done()) throw new Error(`stream reader: not done (${sr.bytesRemaining()} bytes left)`);
  out.stream = stream;
  out.records = kinds;
  if (ros2) out.ros2 = dec.topics;
  // The data-section CRC, recomputed.
  const de = dataEndAt(buf);
  out.dataCrc = { stored: de.crc, computed: zlib.crc32(buf.subarray(0, de.at)) };
  // Indexed reader (summary CRC checked in Initialize).
  if (dvFooterSummaryStart(buf) !== 0n) {
    const readable = {
      size: async () => BigInt(buf.length),
      read: async (offset, size) => buf.subarray(Number(offset), Number(offset + size)),
    };
    const ir = await McapIndexedReader.Initialize({ readable, decompressHandlers });
    const indexed = [];
    for await (const m of ir.readMessages({ validateCrcs: true })) if (!ros2) indexed.push(msgOut(m));
    out.indexed = indexed;
    out.chunkIndexes = ir.chunkIndexes.map((c) => c.compression);
    out.channels = [...ir.channelsById.values()].map((c) => ({ id: c.id, topic: c.topic, schemaId: c.schemaId, encoding: c.messageEncoding, metadata: Object.fromEntries(c.metadata) }));
    out.schemas = [...ir.schemasById.values()].map((s) => ({ id: s.id, name: s.name, encoding: s.encoding, data: Buffer.from(s.data).toString("hex") }));
    out.indexedDataCrc = ir.dataSectionCrc ?? 0;
    out.attachments = [];
    for await (const a of ir.readAttachments({ validateCrcs: true })) {
      out.attachments.push({ name: a.name, mediaType: a.mediaType, data: Buffer.from(a.data).toString("hex"), log: a.logTime.toString() });
    }
    out.metadata = [];
    for await (const m of ir.readMetadata()) out.metadata.push({ name: m.name, metadata: Object.fromEntries(m.metadata) });
  }
  return out;
}

function dvFooterSummaryStart(buf) {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return dv.getBigUint64(buf.length - 8 - 29 + 9, true);
}

async function writeCase(c) {
  const chunks = [];
  let pos = 0n;
  const writable = {
    write: async (b) => { chunks.push(Buffer.from(b)); pos += BigInt(b.byteLength); },
    position: () => pos,
  };
  const compressChunk = {
    "": undefined,
    zstd: (data) => ({ compression: "zstd", compressedData: zstd.compress(data) }),
    lz4: (data) => ({ compression: "lz4", compressedData: lz4js.compress(data) }),
  }[c.compression];
  const s = c.summary;
  const w = new McapWriter({
    writable,
    useChunks: c.chunked,
    chunkSize: c.chunkSize,
    compressChunk,
    useStatistics: s, useSummaryOffsets: s, useChunkIndex: s, useMessageIndex: s,
    useAttachmentIndex: s, useMetadataIndex: s, repeatSchemas: s, repeatChannels: s,
  });
  await w.start(c.header);
  const schemaIds = {};
  for (const sc of c.schemas) {
    schemaIds[sc.id] = await w.registerSchema({ name: sc.name, encoding: sc.encoding, data: Buffer.from(sc.data, "hex") });
  }
  const channelIds = {};
  for (const ch of c.channels) {
    channelIds[ch.id] = await w.registerChannel({
      topic: ch.topic, schemaId: ch.schemaId ? schemaIds[ch.schemaId] : 0,
      messageEncoding: ch.encoding, metadata: new Map(Object.entries(ch.metadata ?? {})),
    });
  }
  for (const m of c.messages) {
    await w.addMessage({
      channelId: channelIds[m.channel], sequence: m.seq, logTime: BigInt(m.log), publishTime: BigInt(m.pub),
      data: Buffer.from(m.data, "hex"),
    });
  }
  await w.end();
  fs.writeFileSync(c.file, Buffer.concat(chunks));
  return { file: c.file, channelIds, schemaIds };
}

async function main() {
  const req = JSON.parse(fs.readFileSync(0, "utf8"));
  await zstd.isLoaded;
  await lz4.isLoaded;
  const results = [];
  if (req.mode === "read") {
    for (const f of req.files) {
      try { results.push(await readFile(f, req.ros2)); } catch (e) { results.push({ file: f, error: String(e && e.stack || e) }); }
    }
  } else if (req.mode === "write") {
    for (const c of req.cases) {
      try { results.push(await writeCase(c)); } catch (e) { results.push({ file: c.file, error: String(e && e.stack || e) }); }
    }
  } else {
    throw new Error(`unknown mode ${req.mode}`);
  }
  process.stdout.write(JSON.stringify({ results }));
}

main().catch((e) => { console.error(e); process.exit(1); });
