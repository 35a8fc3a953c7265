"""After the report: metrics pushed to a Pushgateway and a webhook notification. Both only
read the finished summary; neither can fail a run or change its exit code."""
