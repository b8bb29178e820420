package histories

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/model"
)

// The JSON Schema of the format, docs/history-format.schema.json, is for
// tools other than fencecheck. These tests hold it and Load to agreement:
// every saved history passes both, and the documents Load refuses the
// schema refuses too, but for the rules a schema cannot state
// (beyondSchema).

const (
	repoRoot   = ".."
	schemaPath = repoRoot + "/docs/history-format.schema.json"
)

// beyondSchema are the cases of loadRejects that the schema accepts,
// and why: rules that hold between two values, or between operations, or
// on how a number is written. Load alone enforces them, and
// docs/history-format.md lists them. (A document that is not JSON is no
// exception: the validator cannot read it either.) The test checks that
// the schema does accept each one, so that this list stays true.
var beyondSchema = map[string]string{
	"ops twice":                                     "a validator sees the parsed object, where a member name appears once",
	"id used twice":                                 "ids are unique across operations; uniqueItems compares whole operations",
	"call not an integer":                           "1e3 is the integer 1000 to JSON Schema; Load wants integers written as integers",
	"tick ms written 1.0":                           "1.0 is the integer 1 to JSON Schema",
	"return before call":                            "a schema cannot compare two members",
	"requests of one proc overlap":                  "overlap is between operations, over time",
	"requests of one proc called together":          "overlap is between operations, over time",
	"called together, one answered at once":         "overlap is between operations, over time",
	"offset_metadata of a partition not committed":  "a schema cannot compare one member's keys with another's",
	"partition_errors of a partition not committed": "a schema cannot compare one member's keys with another's",
	"partition_errors the same for every partition": "a schema cannot compare an object's values with each other",
	"offset_fetch listing a partition twice":        "a schema cannot compare the keys of one member with the items of another",
}

// historySchema is the compiled schema.
func historySchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("history-format.schema.json", doc))
	s, err := c.Compile("history-format.schema.json")
	require.NoError(t, err)
	return s
}

// validate is the schema's answer on the document data: nil, or why it
// refuses it (not JSON included).
func validate(s *jsonschema.Schema, data []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// unusableDir holds example files that are malformed on purpose, to show
// the error a reader meets: Load and the schema must both refuse them.
const unusableDir = "unusable"

// savedHistories are the paths of every *.json file in the repository
// that says it is a v1 history, those kept as unusable on purpose aside.
func savedHistories(t testing.TB) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != repoRoot || d.Name() == unusableDir) {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var head struct{ Format string }
		if json.Unmarshal(data, &head) == nil && head.Format == Format {
			paths = append(paths, path)
		}
		return nil
	})
	require.NoError(t, err)
	return paths
}

func TestSchemaAcceptsSavedHistories(t *testing.T) {
	s := historySchema(t)
	paths := savedHistories(t)
	// The walk must find the histories of each place they are kept.
	for _, dir := range []string{"histories/canonical", "histories/kfake", "histories/clients", "histories/mutants",
		"histories/testdata", "docs/examples"} {
		require.True(t, slices.ContainsFunc(paths, func(p string) bool {
			return strings.HasPrefix(filepath.ToSlash(p), repoRoot+"/"+dir+"/")
		}), "no history found under %s", dir)
	}
	for _, path := range paths {
		t.Run(strings.TrimPrefix(filepath.ToSlash(path), repoRoot+"/"), func(t *testing.T) {
			_, err := LoadFile(path)
			require.NoError(t, err, "Load")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, validate(s, data), "the schema")
		})
	}
}

func TestSchemaAndLoadRefuseTheUnusableExamples(t *testing.T) {
	s := historySchema(t)
	paths, err := filepath.Glob(filepath.Join(repoRoot, "docs", "examples", unusableDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no unusable example found")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, err := LoadFile(path)
			require.Error(t, err, "Load")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Error(t, validate(s, data), "the schema")
		})
	}
}

func TestSchemaAcceptsWhatLoadAccepts(t *testing.T) {
	s := historySchema(t)
	for name, d := range loadAccepts {
		t.Run(name, func(t *testing.T) {
			_, err := Load(strings.NewReader(d))
			require.NoError(t, err, "Load")
			require.NoError(t, validate(s, []byte(d)), "the schema")
		})
	}
}

func TestSchemaRejectsWhatLoadRejects(t *testing.T) {
	s := historySchema(t)
	for _, c := range loadRejects {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(c.doc))
			require.Error(t, err, "Load")
			err = validate(s, []byte(c.doc))
			if why, beyond := beyondSchema[c.name]; beyond {
				require.NoError(t, err, "the schema now refuses this (%s): take it out of beyondSchema", why)
				return
			}
			require.Error(t, err, "the schema accepts what Load refuses: %s", c.err)
		})
	}
	for name := range beyondSchema {
		require.True(t, slices.ContainsFunc(loadRejects, func(c struct{ name, doc, err string }) bool { return c.name == name }),
			"beyondSchema names %q, which loadRejects does not have", name)
	}
}

// TestSchemaNamesWhatLoadKnows: the schema's operation types and error
// codes are the model's, which are what Load accepts.
func TestSchemaNamesWhatLoadKnows(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	var schema struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(data, &schema))
	var kinds []string
	for _, k := range model.Kinds {
		kinds = append(kinds, string(k))
	}
	types := append(slices.Clone(schema.Defs["request_type"].Enum), schema.Defs["fault_type"].Enum...)
	require.Equal(t, kinds, types)
	var requests []string
	for _, k := range model.Kinds {
		if k.IsRequest() {
			requests = append(requests, string(k))
		}
	}
	require.Equal(t, requests, schema.Defs["request_type"].Enum)
	var codes []string
	for _, c := range model.Codes {
		codes = append(codes, string(c))
	}
	require.Equal(t, codes, schema.Defs["error_code"].Enum)
	for _, c := range model.Codes {
		require.True(t, model.KnownCode(c), "model.Codes lists %s, which Load refuses", c)
	}
	for _, k := range requests {
		var codes []string
		for _, c := range model.CodesFor(model.Kind(k)) {
			codes = append(codes, string(c))
		}
		require.Equal(t, codes, schema.Defs["error_"+k].Enum, "the codes of a %s", k)
	}
}

// FuzzSchemaAcceptsWhatLoadAccepts: whatever Load accepts, the schema
// accepts. (The converse does not hold: see beyondSchema.)
func FuzzSchemaAcceptsWhatLoadAccepts(f *testing.F) {
	for _, name := range []string{"example.json", "every-type.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(data)
	}
	for _, d := range loadAccepts {
		f.Add([]byte(d))
	}
	s := historySchema(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Load(bytes.NewReader(data)); err != nil {
			return
		}
		require.NoError(t, validate(s, data), "Load accepts it, the schema does not")
	})
}

// TestSchemaAndLoadAgreeOnVersions: for every request type, every code
// it may get and every api_version from one below 0 to past the newest
// Kafka has, the schema accepts exactly what Load accepts: any version
// from 0, with any code the request may get at some version (a code of
// another version is error-codes' to judge).
func TestSchemaAndLoadAgreeOnVersions(t *testing.T) {
	s := historySchema(t)
	data, err := os.ReadFile(filepath.Join("testdata", "every-type.json"))
	require.NoError(t, err)
	var every struct{ Ops []map[string]any }
	require.NoError(t, json.Unmarshal(data, &every))
	// every-type.json has no heartbeat, offset_commit nor sync_group,
	// which came to the format later.
	every.Ops = append(every.Ops, map[string]any{"type": "heartbeat", "return": 1,
		"req": map[string]any{"group": "g", "member_id": "m", "generation_id": 1}},
		map[string]any{"type": "offset_commit", "return": 1,
			"req": map[string]any{"group": "g", "member_id": "m", "generation_id": 1, "offsets": map[string]any{"in-0": 3}}},
		map[string]any{"type": "sync_group", "return": 1,
			"req": map[string]any{"group": "g", "member_id": "m", "generation_id": 1,
				"assignments": map[string]any{"m": []any{"t-0"}}}})
	// Nor a consumer_group_heartbeat (KIP-848), later still.
	every.Ops = append(every.Ops, map[string]any{"type": "consumer_group_heartbeat", "return": 1,
		"req": map[string]any{"group": "g", "member_id": "m", "member_epoch": 0, "subscribed_topic_names": []any{"trips"},
			"owned_partitions": []any{}, "rebalance_timeout_ms": 300000}})
	seen := map[model.Kind]bool{}
	for _, op := range every.Ops {
		kind := model.Kind(op["type"].(string))
		if !kind.IsRequest() || seen[kind] || op["return"] == nil {
			continue
		}
		seen[kind] = true
		for _, code := range model.CodesFor(kind) {
			for v := -1; v <= 20; v++ {
				one := map[string]any{"id": 0, "proc": "A", "call": 0, "return": 1, "type": op["type"], "req": op["req"],
					"api_version": v, "error": code}
				d, err := json.Marshal(map[string]any{"format": Format, "ops": []any{one}})
				require.NoError(t, err)
				_, loadErr := Load(bytes.NewReader(d))
				schemaErr := validate(s, d)
				require.Equal(t, loadErr == nil, schemaErr == nil, "%s v%d answered %s: Load says %v, the schema %v",
					kind, v, code, loadErr, schemaErr)
			}
		}
	}
	for _, k := range model.Kinds {
		require.Equal(t, k.IsRequest(), seen[k], "every-type.json has an answered %s", k)
	}
}
