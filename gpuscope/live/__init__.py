"""While it runs: the sampler's rows kept for a live view (`gpuscope watch`, `record --live`) and
a metrics endpoint (`--metrics ADDR:PORT`). state: the tap (LiveState); view: the Rich panel and
the plain lines; finding: the running first diagnosis; session: watch's loop."""
