// Package files writes report files and reads the JSON ones back.
package files

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Write creates path and fills it with write; a failed write names the file.
func Write(path string, write func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Close()
}

// ReadJSON decodes the JSON file at path into v; an error names the file.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
