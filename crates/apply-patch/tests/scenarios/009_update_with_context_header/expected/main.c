int main() {
    puts("hello");
}
