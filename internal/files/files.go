// Package files writes report files.
package files

import (
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
