int main() {
    puts("hi");
}
