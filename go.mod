module github.com/askbridge/askbridge

go 1.26
