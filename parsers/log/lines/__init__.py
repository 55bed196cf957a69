"""Format `lines`: timing lines as people print them, from any program. The format's own
documentation (what a field, a duration, a record and the whole are) is the docstring of
read.py, its entry point. Nothing is imported here: the modules are imported by name.

The map, one module per concept, bottom up:

- vocabulary.py: the words (units, time words, wholes, statistics, steps, sizes); how one
  value token and one key read. Pure tables and functions. (The words shared with the `kv`
  format stay in parsers/log/words.py, the `key=value` field reading in parsers/log/fields.py.)
- reading.py: the types the modules share: a line's reading (LineReading) and the reader's
  State as they see it (ReaderState, a Protocol: line.py, where State lives, imports them
  all, so they cannot import it).
- line.py: reading one line: its message after a time prefix, its tokens, the reader's
  State across lines, and read_line (a known shape replayed, a new one read in full).
- fields.py: a new shape's fields, read in full (`Line`, one class: its quantities, sizes,
  counters, byte counts and stamps, and the times no key names, too), and what is evidence
  of a duration.
- frameworks.py: the frameworks' own line shapes the shared field reader cannot read alone
  (Keras, tqdm, TensorFlow's hooks, Megatron's timers, llama.cpp, MLPerf, criterion), each
  named by parsers/log/formats.py FRAMEWORKS.
- nesting.py: parts printed in parentheses after a time belong to it; a lock's tenure
  printed before its parts without parentheses is their whole (tenure).
- trees.py: timer trees (plonky2's TimingTree, tracing-forest) read as trees.
- plan.py: a line's reading kept as a plan and replayed on the next line of its shape (the
  per-line replay), and a line's whole (whole_code).
- vectorised.py: a plan replayed over every line of one shape at once, in numpy (the
  vectorised replay, fed by the compiled shape splitter).
- replay.py: the log read through the compiled shape splitter: the reader reads the first line
  of each shape and every line the plans do not certainly replay; vectorised.py the rest.
- assemble.py: the rows read line by line and the rows replayed, put in line order.
- read.py: the entry point: the scan of a log's lines, format detection's vote (sniff).
- records.py: records and the whole over the whole log at once (which lines form a record,
  which field is its whole, statistics, nested parts); duplicates.py (a line two logging
  handlers printed, read once), steps.py (how many steps a record stands for) and bars.py
  (which tqdm redraws are no steps) serve it; closing.py closes the records (each numbered, its
  held time set; a whole on a line of its own ends its record or, by the sums, starts it).
"""
