package checker

// TxnStreamDiff lets the external tests hold the transaction stream to
// analyzeTxns on their synthetic histories.
var TxnStreamDiff = txnStreamDiff
