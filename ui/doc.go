// Package ui will embed the dashboard's static files (served on /ui when
// web.enable is set). It is empty until the dashboard lands.
package ui
