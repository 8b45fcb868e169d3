module example.com/kit

go 1.22
