// Writes the Parquet fixtures of tests/core/test_parquet.cpp with DuckDB (@duckdb/node-api), an
// independent writer and reader, and next to each <name>.parquet a <name>.expected.json holding the rows
// as DuckDB itself reads them back, so our reader is compared value by value with another implementation.
// DuckDB writes only v1 data pages (PARQUET_VERSION V2 changes the encodings, not the page kind) and one
// page per small column chunk, so the `v2pages_*` files come from hyparquet-writer: data pages v2, many
// pages per chunk, DELTA_BYTE_ARRAY and RLE booleans; DuckDB still reads them back for the expected rows.
//
//   node make_fixtures.mjs OUT_DIR
//
// <name>.expected.json: {"covers": what the file exercises, "row_groups": [rows of each group],
// "encodings": {column path: DuckDB's list of encodings}, "codecs": [...], "rows": [row objects]}.
// Rows are plain JSON: BIGINT and UBIGINT values are written as exact integers (not strings), FLOAT
// values as DuckDB returns them (widened to double), structs as objects in field order.
// Prints one line per file on stdout, then the encodings DuckDB did and did not produce.
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetWriteFile } from 'hyparquet-writer';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const out = process.argv[2];
if (!out) {
  console.error('usage: node make_fixtures.mjs OUT_DIR');
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run('SET threads = 1');  // rows keep their order on the way in and out

// JSON with BigInt written as exact digits (JSON.stringify refuses BigInt).
function toJson(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`non-finite number ${v} cannot be JSON`);
    return JSON.stringify(v);
  }
  if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(toJson).join(',') + ']';
  if (typeof v === 'object') {
    if (v.items && Array.isArray(v.items)) return toJson(v.items);  // DuckDB list values
    if (v.entries && typeof v.entries === 'object') return toJson(v.entries);  // DuckDB struct values
    return '{' + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ':' + toJson(x)).join(',') + '}';
  }
  throw new Error(`unexpected value ${v}`);
}

const q = (s) => s.replace(/'/g, "''");

// The flat table: every primitive kind the reader maps, with nulls in several patterns (none, every
// n-th, sparse, all). DuckDB writes every column OPTIONAL, NOT NULL ones too; REQUIRED columns (no
// definition levels) come from hyparquet-writer below.
await con.run(`CREATE TABLE flat (
  id INTEGER NOT NULL, big BIGINT NOT NULL, i8 TINYINT, u8 UTINYINT, u32 UINTEGER, u64 UBIGINT,
  f FLOAT, d DOUBLE, flag BOOLEAN, name VARCHAR, cat VARCHAR, sparse INTEGER, all_null VARCHAR, text VARCHAR)`);
await con.run(`INSERT INTO flat SELECT
  i::INTEGER,
  CASE WHEN i = 0 THEN -9223372036854775808 WHEN i = 1 THEN 9223372036854775807 ELSE (i * 1000003 - 2500000000)::BIGINT * 1000 END,
  CASE WHEN i % 13 = 0 THEN NULL ELSE ((i % 256) - 128)::TINYINT END,
  (i % 256)::UTINYINT,
  CASE WHEN i % 4 = 1 THEN NULL ELSE (4294967295 - i)::UINTEGER END,
  CASE WHEN i % 6 = 2 THEN NULL ELSE (18446744073709551615 - i * 7)::UBIGINT END,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 0.25 - 100.125)::FLOAT END,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i * 3.141592653589793 / 7 - 1e10 END,
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 3 = 1) END,
  CASE WHEN i % 11 = 0 THEN NULL ELSE 'name ' || i || ' é ✓' END,
  CASE WHEN i % 9 = 0 THEN NULL ELSE ['alpha', 'beta', 'gamma', 'δέλτα'][1 + i % 4] END,
  CASE WHEN i % 97 = 0 THEN i ELSE NULL END,
  NULL,
  CASE WHEN i % 17 = 0 THEN '' ELSE repeat('line "' || i || '"' || chr(10) || 'tab' || chr(9) || ' 😀 ', 1 + i % 5) END
FROM range(5000) t(i)`);

// Chat-shaped rows: messages list<struct<role, content>> with null lists, empty lists, null elements
// and null fields; and a struct holding lists of structs (content parts, tool calls with a struct inside).
await con.run(`CREATE TABLE chat (
  id INTEGER,
  messages STRUCT(role VARCHAR, content VARCHAR)[],
  conversation STRUCT(
    source VARCHAR,
    turns STRUCT(
      role VARCHAR,
      parts STRUCT(type VARCHAR, text VARCHAR)[],
      tool_calls STRUCT(id VARCHAR, function STRUCT(name VARCHAR, arguments VARCHAR))[])[]),
  tags VARCHAR[],
  matrix INTEGER[][])`);
await con.run(`INSERT INTO chat SELECT
  i,
  CASE WHEN i % 10 = 3 THEN NULL
       WHEN i % 10 = 4 THEN []
       WHEN i % 10 = 5 THEN [NULL, {'role': 'user', 'content': NULL}]
       ELSE list_slice([{'role': 'system', 'content': 'Be brief.'},
                        {'role': 'user', 'content': 'Question ' || i || '?'},
                        {'role': 'assistant', 'content': 'Answer ' || i || ' ✓'},
                        {'role': 'user', 'content': repeat('more ', i % 4)}], 1, 1 + i % 4) END,
  CASE WHEN i % 8 = 7 THEN NULL
       WHEN i % 8 = 6 THEN {'source': NULL, 'turns': NULL}
       WHEN i % 8 = 5 THEN {'source': 'empty', 'turns': []}
       ELSE {'source': 'src' || (i % 3),
             'turns': list_slice([
               {'role': 'user',
                'parts': [{'type': 'text', 'text': 'hi ' || i}, {'type': 'image', 'text': NULL}],
                'tool_calls': []},
               {'role': 'assistant',
                'parts': CASE WHEN i % 2 = 0 THEN NULL ELSE [{'type': 'text', 'text': 'calling'}] END,
                'tool_calls': [{'id': 'call_' || i, 'function': {'name': 'lookup', 'arguments': '{"q": ' || i || '}'}},
                               {'id': NULL, 'function': NULL}]},
               {'role': 'tool', 'parts': [], 'tool_calls': NULL}], 1, 1 + i % 3)} END,
  CASE WHEN i % 6 = 0 THEN NULL ELSE list_slice(['a', NULL, 'c', 'd'], 1, i % 5) END,
  CASE WHEN i % 9 = 0 THEN NULL ELSE [[i, NULL], [], [i + 1]] END
FROM range(3000) t(i)`);

// A small dictionary-encoded column (uncompressed, one page per chunk): the test edits its
// data page by hand to put a dictionary index out of range and to claim a huge page.
await con.run(`CREATE TABLE small (id INTEGER NOT NULL, answer VARCHAR NOT NULL)`);
await con.run(`INSERT INTO small SELECT i, CASE WHEN i % 3 = 0 THEN 'yes' ELSE 'no' END FROM range(40) t(i)`);

const COVERS_FLAT = 'flat columns: INTEGER, BIGINT (with its extremes), TINYINT, UTINYINT, UINTEGER, UBIGINT, ' +
  'FLOAT, DOUBLE, BOOLEAN, strings (unique and low-cardinality), mostly-null, all-null, long text; several row groups';
const COVERS_CHAT = 'nested: messages list<struct<role, content>> with null, empty and null-element lists; ' +
  'a struct with a list of structs holding lists of structs (parts, tool_calls with a struct); list<string>; list<list<int>>';

const fixtures = [];
for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4_raw', 'brotli']) {
  for (const version of ['V1', 'V2']) {
    fixtures.push({ name: `flat_${codec}_${version.toLowerCase()}`, table: 'flat', codec, version, rowGroup: 2048, covers: COVERS_FLAT });
  }
}
for (const [codec, version] of [['snappy', 'V1'], ['zstd', 'V2'], ['gzip', 'V2'], ['uncompressed', 'V1']]) {
  fixtures.push({ name: `chat_${codec}_${version.toLowerCase()}`, table: 'chat', codec, version, rowGroup: 1024, covers: COVERS_CHAT });
}
fixtures.push({ name: 'small_dict_uncompressed_v1', table: 'small', codec: 'uncompressed', version: 'V1', rowGroup: 2048,
  covers: 'a dictionary-encoded string column (the base of the hand-edited negative controls)' });

// hyparquet-writer's columns: each encoding asked for explicitly, nulls in several patterns. (No
// BYTE_STREAM_SPLIT integers: DuckDB, the judge, reads that encoding only for FLOAT and DOUBLE.)
function v2Columns() {
  const n = 4000;
  const col = (name, type, encoding, f, nullable = true) => ({ name, type, encoding, nullable, data: Array.from({ length: n }, (_, i) => f(i)) });
  return [
    col('id', 'INT32', 'DELTA_BINARY_PACKED', (i) => ((i * 7919) % 20011) - 10000, false),
    col('big', 'INT64', 'DELTA_BINARY_PACKED', (i) => (i % 10 === 3 ? null : i === 1 ? -9223372036854775808n : i === 2 ? 9223372036854775807n : BigInt(i) * 123456789013n - 5n ** 20n)),
    col('split_f', 'FLOAT', 'BYTE_STREAM_SPLIT', (i) => (i % 6 === 1 ? null : Math.fround(i / 8 - 250.5))),
    col('split_d', 'DOUBLE', 'BYTE_STREAM_SPLIT', (i) => (i % 5 === 2 ? null : Math.sin(i) * 1e6)),
    col('d', 'DOUBLE', 'PLAIN', (i) => i * 0.1 - 3),
    col('flag', 'BOOLEAN', 'RLE', (i) => (i % 7 === 0 ? null : (i >> 3) % 2 === 0)),
    col('flag_plain', 'BOOLEAN', 'PLAIN', (i) => i % 3 === 0, false),
    col('key', 'STRING', 'DELTA_BYTE_ARRAY', (i) => (i % 9 === 4 ? null : `users/${String(Math.floor(i / 10)).padStart(6, '0')}/item-${i % 10} ✓`)),
    col('note', 'STRING', 'DELTA_LENGTH_BYTE_ARRAY', (i) => (i % 11 === 0 ? null : i % 11 === 1 ? '' : 'note ' + 'ab'.repeat(i % 13) + ' é')),
    col('cat', 'STRING', undefined, (i) => (i % 8 === 0 ? null : ['red', 'green', 'blue'][i % 3])),
    col('plain_s', 'STRING', 'PLAIN', (i) => `row ${i}`, false),
  ];
}
const COVERS_V2 = 'hyparquet-writer: data pages v2 (levels outside the compressed values), several pages per chunk, ' +
  'REQUIRED columns (id, flag_plain, plain_s: no definition levels), ' +
  'DELTA_BINARY_PACKED INT32/INT64, BYTE_STREAM_SPLIT FLOAT/DOUBLE, RLE and PLAIN booleans, DELTA_BYTE_ARRAY, ' +
  'DELTA_LENGTH_BYTE_ARRAY, dictionary and PLAIN strings';
const compressors = {
  GZIP: (b) => new Uint8Array(zlib.gzipSync(b)),
  BROTLI: (b) => new Uint8Array(zlib.brotliCompressSync(b)),
};
for (const codec of ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'BROTLI']) {
  fixtures.push({ name: `v2pages_${codec.toLowerCase()}`, hyparquet: codec, covers: COVERS_V2 });
}

const seen = new Set();
for (const f of fixtures) {
  const file = path.join(out, f.name + '.parquet');
  if (f.hyparquet) {
    parquetWriteFile({ filename: file, columnData: v2Columns(), codec: f.hyparquet, compressors, pageSize: 2048, rowGroupSize: 1500 });
    f.codec = f.hyparquet.toLowerCase();
    f.version = 'data page v2';
  } else {
    await con.run(`COPY (SELECT * FROM ${f.table} ORDER BY id) TO '${q(file)}'
      (FORMAT parquet, COMPRESSION ${f.codec}, PARQUET_VERSION ${f.version}, ROW_GROUP_SIZE ${f.rowGroup})`);
  }
  const rows = (await con.runAndReadAll(`SELECT * FROM read_parquet('${q(file)}')`)).getRowObjectsJS();
  const meta = (await con.runAndReadAll(`SELECT row_group_id, row_group_num_rows, path_in_schema, encodings, compression
    FROM parquet_metadata('${q(file)}') ORDER BY row_group_id, column_id`)).getRowObjectsJS();
  const groups = [];
  const encodings = {};
  const codecs = new Set();
  for (const m of meta) {
    groups[Number(m.row_group_id)] = Number(m.row_group_num_rows);
    const col = String(m.path_in_schema).split(', ').join('.');
    const list = new Set((encodings[col] ?? '').split(', ').filter(Boolean));
    for (const e of String(m.encodings).split(', ')) { list.add(e); seen.add(e); }
    encodings[col] = [...list].join(', ');
    codecs.add(String(m.compression));
  }
  const doc = '{"covers":' + JSON.stringify(`${f.covers}; ${f.codec}, ${f.version}`) +
    ',"row_groups":' + JSON.stringify(groups) + ',"encodings":' + JSON.stringify(encodings) +
    ',"codecs":' + JSON.stringify([...codecs]) + ',"rows":[\n' + rows.map(toJson).join(',\n') + '\n]}\n';
  fs.writeFileSync(path.join(out, f.name + '.expected.json'), doc);
  console.log(`${f.name}.parquet: ${rows.length} rows, ${groups.length} row groups, ${[...codecs].join('/')}`);
}
const wanted = ['PLAIN', 'PLAIN_DICTIONARY', 'RLE_DICTIONARY', 'DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY',
  'DELTA_BYTE_ARRAY', 'BYTE_STREAM_SPLIT', 'RLE'];
console.log('encodings written: ' + [...seen].sort().join(', '));
console.log('encodings neither writer wrote: ' + (wanted.filter((e) => !seen.has(e)).join(', ') || 'none'));
