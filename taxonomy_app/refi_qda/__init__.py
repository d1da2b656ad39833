"""Codebooks as REFI-QDA codebooks (.qdc): write one, and read one from us or from another tool.
Imports no Django.

The REFI-QDA Codebook Exchange (QDA-XML 1.0, namespace `urn:QDA-XML:codebook:1.0`, the schema in
taxonomy_app/schemas/Codebook.xsd) is how ATLAS.ti, MAXQDA, NVivo, QualCoder and Taguette
exchange codebooks. It holds a tree of codes — each a `guid`, a `name`, `isCodable`, an optional
`color` and an optional `<Description>` text — and optional sets of codes; nothing else.

Writing (`write_qdc`, writer.py). The file validates against the schema, and a version gives the
same bytes every time:

    <?annotator-codebook {"format": "annotator-codebook/1", "codebook": {…}, "version": {…}}?>
    <CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="annotator (annotator-codebook/1): …">
      <Codes>
        <Code guid="…" name="Symptom" isCodable="false" color="#4E79A7">        a facet
          <Description>Key: symptom
    Kind: single
    Required: no
    Rule 3: leaf_only
    Help: What the user sees.</Description>
          <Code guid="…" name="Program failure" isCodable="true" color="#4E79A7">  a category
            <Description>Code: failure
    Definition: Stops.</Description>
            <Code guid="…" name="Hang" isCodable="true" color="#4E79A7">…</Code>  a child

- Each facet is a top-level code, not codable; its categories are the codes inside it, nested as
  the categories are. Categories are codable, except archived ones.
- What QDC has no place for is folded into the descriptions as lines "Heading: value" (a value of
  several lines starts on the line below its heading; a line of it that would read as a heading
  gets a backslash in front), descriptions.py:
  a facet's `Key`, `Kind` (single | multi), `Required` (yes | no), its label rules, one line
  each, `Rule N: KIND field=value …` (N: the rule's position in the codebook; lists are
  comma-separated: `Rule 1: requires when_facet=screening when_categories=relevant`), `Help`;
  a category's `Code` (its key: the name stays the plain label other tools show), `Archived:
  yes`, `Definition`, `Include`, `Exclude`, `Example`.
- The codebook's name, slug and description and the version's number, status and changelog, for
  which QDC has no element at all, are in the processing instruction before the root element
  (other tools skip it); its JSON is the head of the JSON format.
- `guid`s are uuid5 of the codebook's slug, the facet key and the category code, so they stay
  the same from version to version; `color` is the facet's, from a fixed palette (the model has
  no colour), shared by its categories.
Our own export → import → export therefore gives the same file, and keeps all the JSON format
carries: facets, categories, codes, hierarchy and order, texts, kinds, required, archived, rules.

Reading (`read_qdc`, reader.py) builds the document the JSON format decodes to and checks it with
`formats.parse_codebook`, so an import reuses the JSON and YAML path, its checks and messages.
A file from another tool maps so:
- a top-level code with codes inside it, or one not codable, is a facet: its description is the
  facet's help, every code below it a category, nested as in the file;
- top-level codable codes without codes inside go into one facet named after the codebook (the
  uploaded file's name, or the codebook it is imported into), placed where the first of them is;
- a category's code is its `Code:` line, else made from its name ("Out of memory" →
  `out-of-memory`; `code-` and the guid's first 8 digits when the name has no ASCII letter or
  digit), with "-2", "-3" added to repeats within a facet; facet keys likewise;
- a facet is multiple-choice (a QDA tool applies any number of codes) and not required, unless
  its description says otherwise: a facet's description is read as ours only when its first
  line is "Key: …", else it is all help (prose may well say "Kind: …"); a category's
  description without our headings is its definition (text before the first heading is added
  to the definition).
What such a file loses: its guids (an export derives ours) and colours, its sets, `isCodable` of
the codes below the top (all become categories, choosable; add a `leaf_only` rule on the draft),
`isCodable` of a top-level code with codes inside (it becomes a facet, which is not a label), and
the codebook's name (QDC has none). An empty `<Sets/>` (Taguette writes one, which the schema
does not allow) is dropped before validating.

Every problem raises CodebookFormatError naming the code (its name, line and guid) and the field;
schema errors give the line. Reading is bounded as JSON and YAML are (markup.py): a DOCTYPE or
entity declaration is refused before parsing (they are how XXE and billion-laughs files work),
lxml parses with entities unresolved, no network, no DTD and no huge trees; then at most
MAX_NODES elements, codes nested at most `max_depth` (CODEBOOK_MAX_DEPTH) deep and at most
MAX_CATEGORIES categories — all before anything is written. The project's upload check limits
the file's size (CODEBOOK_MAX_BYTES) before it is read.
"""

from .markup import NAMESPACE, SCHEMA_PATH, looks_like_qdc, schema
from .reader import name_from_filename, qdc_document, read_qdc
from .writer import write_qdc

__all__ = [
    "NAMESPACE",
    "SCHEMA_PATH",
    "looks_like_qdc",
    "name_from_filename",
    "qdc_document",
    "read_qdc",
    "schema",
    "write_qdc",
]
