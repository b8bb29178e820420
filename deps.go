package fencecheck
import (
 _ "pgregory.net/rapid"
 _ "github.com/anishathalye/porcupine"
 _ "github.com/stretchr/testify/require"
 _ "github.com/cockroachdb/datadriven"
)
