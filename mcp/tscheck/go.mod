module github.com/askbridge/askbridge/mcp/tscheck

go 1.26.0

toolchain go1.27.3
